"""The package layout: one-way imports and deliberate public APIs."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["harness", "checks", "termination", "strategies"]


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", LAYERS)
def test_imports_point_one_way(package: str) -> None:
    """A package imports only lower layers: strategies -> termination -> checks -> harness."""
    allowed_above = set(LAYERS[LAYERS.index(package) + 1 :])
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = _imported_packages(path) & allowed_above
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert offenders == []


def _private_imports(path: Path, own: str | None) -> list[str]:
    """The imports in `path` of another package's private modules (``harness._x``), with lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        for module in modules:
            top, *rest = module.split(".")
            if top in LAYERS and top != own and any(part.startswith("_") for part in rest):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {module}")
    return found


@pytest.mark.parametrize("package", LAYERS)
def test_no_private_imports_across_packages(package: str) -> None:
    """A package imports only another package's public modules (`harness`, `harness.extend`,
    `checks.extend`...), never its private ones: what is shared is public, named for its
    audience."""
    offenders = [
        hit
        for path in sorted((ROOT / package).rglob("*.py"))
        for hit in _private_imports(path, package)
    ]
    assert offenders == []


def test_pytest_plugin_uses_public_names_only() -> None:
    """The pytest plugin is a client of the packages like any user's code."""
    assert _private_imports(ROOT / "pytest_completion_harness.py", None) == []


AUDIENCE_MODULES = [
    "harness",
    "harness.testing",
    "harness.extend",
    "harness.checkpoints",
    "checks",
    "checks.extend",
    "termination",
    "termination.extend",
    "strategies",
]


@pytest.mark.parametrize("package", AUDIENCE_MODULES)
def test_all_is_sorted_and_complete(package: str) -> None:
    """Each package's `__all__` is sorted, names only real objects, and lists every public name."""
    module = importlib.import_module(package)
    exported = list(module.__all__)
    assert exported == sorted(exported)
    for name in exported:
        assert hasattr(module, name), f"{package}.__all__ names missing {name!r}"
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, type(module))
    }
    assert public - set(exported) == set(), "public names missing from __all__"


def test_no_asyncio_outside_backend_shims() -> None:
    """No module imports asyncio: the same code must run on trio."""
    offenders = [
        str(path.relative_to(ROOT))
        for package in LAYERS
        for path in sorted((ROOT / package).rglob("*.py"))
        if "asyncio" in _imported_packages(path)
    ]
    assert offenders == []


@pytest.mark.parametrize("package", AUDIENCE_MODULES)
def test_unknown_names_raise_attribute_error(package: str) -> None:
    """Lazy exports do not swallow typos: an unknown name is an AttributeError naming it."""
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = module.no_such_name
    assert set(module.__all__) <= set(dir(module))


def test_names_that_left_harness_warn_and_name_their_new_home() -> None:
    """A name moved to `harness.testing` or `harness.extend` is still importable from `harness`
    for one release, with a DeprecationWarning naming its new home, and is the same object."""
    import harness

    moved = dict(harness._MOVED)
    assert moved, "nothing is marked as moved"
    for name, home in moved.items():
        assert name not in harness.__all__
        new_home = importlib.import_module(home)
        assert name in new_home.__all__, f"{home} does not export {name}"
        with pytest.warns(
            DeprecationWarning, match=rf"'harness\.{name}' has moved to '{home}\.{name}'"
        ):
            old = getattr(harness, name)
        assert old is getattr(new_home, name)


def test_the_top_level_namespace_is_for_users_of_the_loop() -> None:
    """`harness` keeps what a user of the loop needs; the session, policy and schema internals
    live in `harness.extend`, the fakes in `harness.testing`."""
    import harness

    # 70, the Gemini CLI, Cursor agent and OpenCode clients, names of this round's
    # verification work, the usage-limit pause, and the agent's tools and compaction
    # (edit_file, search_files, run_command_tool, Compaction); the test keeps growth
    # deliberate.
    assert len(harness.__all__) <= 90
    for internal in ("Session", "PolicySession", "Schema", "FakeClock", "check_positive"):
        assert internal not in harness.__all__


def _public_names_block() -> str:
    lines = []
    for name in AUDIENCE_MODULES:
        exported = importlib.import_module(name).__all__
        lines.append(f"- `{name}` ({len(exported)}): " + ", ".join(f"`{n}`" for n in exported))
    return "\n".join(lines)


def test_readme_lists_the_public_names_of_each_module() -> None:
    """The README's layout section lists every public name of every audience module, so a name
    cannot become public (or stop being public) without the README saying so."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = "<!-- public-names:start -->\n", "<!-- public-names:end -->"
    listed = readme[readme.index(start) + len(start) : readme.index(end)].strip()
    expected = _public_names_block()
    assert listed == expected, f"replace the README's public-names block with:\n{expected}"


# Inside `strategies` the applications sit on top of the library: loop strategies < the run
# spec < the board < the command line and the viewer. A module never imports a higher layer.
STRATEGY_LAYERS: dict[str, int] = {
    "strategies._apply_changes": 0,
    "strategies._attempt_budget": 0,
    "strategies._attempt_workspaces": 0,
    "strategies._best_of": 0,
    "strategies._git": 0,
    "strategies._loop": 0,
    "strategies._ralph": 0,
    "strategies._rollback": 0,
    "strategies._reasons": 0,
    "strategies._self_verifying": 0,
    "strategies._strategy_config": 0,
    "strategies._tools_config": 1,
    "strategies._spec": 1,
    "strategies.board": 2,
    "strategies._cli": 3,
    "strategies._viewer": 3,
    "strategies.__main__": 3,
}


def _strategy_layer(module: str) -> int | None:
    """The layer of a module of `strategies` (a subpackage's modules share its layer)."""
    parts = module.split(".")
    for end in range(len(parts), 1, -1):
        layer = STRATEGY_LAYERS.get(".".join(parts[:end]))
        if layer is not None:
            return layer
    return None


def _strategies_imports(path: Path, root: Path = ROOT) -> set[str]:
    """The `strategies` modules (and names) a file imports, relative imports resolved, inside
    functions and `TYPE_CHECKING` blocks too."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            found.add(stem)
            found.update(f"{stem}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("strategies.")}


def _strategies_modules() -> list[tuple[str, Path]]:
    modules = []
    for path in sorted((ROOT / "strategies").rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        modules.append((name.removesuffix(".__init__"), path))
    return modules


def test_every_strategies_module_has_a_layer() -> None:
    """A new module of `strategies` is placed in a layer, so the layering test covers it."""
    unplaced = [
        name
        for name, _ in _strategies_modules()
        if name != "strategies" and _strategy_layer(name) is None
    ]
    assert unplaced == []


def test_strategies_layers_point_down() -> None:
    """Loop strategies < spec < board < command line and viewer: a library piece never
    imports the command line, and the board never imports `_cli`."""
    offenders = []
    for name, path in _strategies_modules():
        own = _strategy_layer(name)
        if own is None:
            continue  # the package's facade re-exports every layer
        for imported in sorted(_strategies_imports(path)):
            layer = _strategy_layer(imported)
            if layer is not None and layer > own:
                offenders.append(f"{name} imports {imported}")
    assert offenders == []


def test_the_layering_test_sees_relative_imports(tmp_path: Path) -> None:
    """The import reader resolves relative imports, also inside a function: a board module
    that reached into the command line would be found and refused."""
    fake = tmp_path / "strategies" / "board" / "_probe.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        "from .._spec import Spec\n\ndef later():\n    from .._cli._run import main\n",
        encoding="utf-8",
    )
    imported = _strategies_imports(fake, tmp_path)
    assert {"strategies._spec", "strategies._cli._run"} <= imported
    own = _strategy_layer("strategies.board._probe")
    assert own is not None
    above = [name for name in imported if (_strategy_layer(name) or 0) > own]
    assert sorted(above) == ["strategies._cli._run", "strategies._cli._run.main"]
