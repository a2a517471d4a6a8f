"""The package layout: one-way imports and deliberate public APIs."""

from __future__ import annotations

import ast
import importlib
import importlib.util
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
    "harness.events",
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


# The event names `harness.extend` and `harness.checkpoints` exported before `harness.events`
# was their one door: deprecated there for one release.
EVENTS_MOVED_FROM = {
    "harness.extend": [
        "BaselineRecorded",
        "ContextCompacted",
        "EventStream",
        "ModelEscalated",
        "ProtectedPathsChanged",
        "ProtectedPathsRecorded",
        "RunPaused",
        "RunResumed",
        "RunTally",
        "SinkFailed",
        "TranscriptReader",
        "UnknownEvent",
        "stream_events",
    ],
    "harness.checkpoints": ["CheckpointFailed", "CheckpointRestored", "CheckpointSaved"],
}


@pytest.mark.parametrize(
    ("module", "name"),
    [(module, name) for module, names in EVENTS_MOVED_FROM.items() for name in names],
)
def test_event_names_left_extend_and_checkpoints_with_a_warning(module: str, name: str) -> None:
    """The 16 event names exported twice are importable from their old module for one release,
    with a DeprecationWarning naming `harness.events`, are the same object, and are no longer
    part of the old module's `__all__` or `dir()`."""
    import harness.events

    old_home = importlib.import_module(module)
    assert name not in old_home.__all__
    assert name not in dir(old_home)
    with pytest.warns(
        DeprecationWarning, match=rf"'{module}\.{name}' has moved to 'harness\.events\.{name}'"
    ):
        old = getattr(old_home, name)
    assert old is getattr(harness.events, name)


def _event_imports_elsewhere(path: Path, event_names: set[str]) -> list[str]:
    """The imports in `path` of an event name (one of `harness.events`) from any `harness`
    module but `harness.events`, or, for a module of `harness`, its own `harness._events`."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    inside_harness = module.split(".")[0] == "harness"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            stem = ".".join([*base, node.module] if node.module else base)
        else:
            stem = node.module or ""
        if stem != "harness" and not stem.startswith("harness."):
            continue
        if stem == "harness.events" or (inside_harness and stem.startswith("harness._events")):
            continue
        names = sorted(alias.name for alias in node.names if alias.name in event_names)
        if names:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {names} from {stem}")
    return found


def test_library_modules_import_events_through_one_door() -> None:
    """Every module of the four packages (and the pytest plugin) takes event classes, sinks and
    readers from `harness.events`; inside `harness` a module takes them from `harness._events`.
    Never from `harness`, `harness.extend` or `harness.checkpoints`, which also export some."""
    import harness.events

    event_names = set(harness.events.__all__)
    paths = [path for package in LAYERS for path in sorted((ROOT / package).rglob("*.py"))]
    offenders = [
        found
        for path in [*paths, ROOT / "pytest_completion_harness.py"]
        for found in _event_imports_elsewhere(path, event_names)
    ]
    assert offenders == []


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


def test_the_architecture_page_lists_the_public_names_of_each_module() -> None:
    """docs/architecture.md lists every public name of every audience module, so a name cannot
    become public (or stop being public) without the docs saying so."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start, end = "<!-- public-names:start -->\n", "<!-- public-names:end -->"
    listed = page[page.index(start) + len(start) : page.index(end)].strip()
    expected = _public_names_block()
    assert listed == expected, f"replace docs/architecture.md's public names with:\n{expected}"


# Inside `strategies` the applications sit on top of the library: loop strategies < the run
# spec < the board < the command line and the viewer. A module never imports a higher layer.
STRATEGY_LAYERS: dict[str, int] = {
    "strategies._apply_changes": 0,
    "strategies._apply_journal": 0,
    "strategies._attempt_budget": 0,
    "strategies._attempt_workspaces": 0,
    "strategies._best_of": 0,
    "strategies._best_of_digest": 0,
    "strategies._best_of_ray": 0,
    "strategies._ray_instance": 0,
    "strategies._best_of_ranking": 0,
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


# Inside `harness` the rooms sit in layers: the plain values and protocols at the root, then
# file access and child processes, events, the session state and the policy seam, the families
# that build on them (tools, checkpoint stores, sinks that leave the process), fixtures, model
# clients and MCP, the turn loop, and the public faces on top. A module imports only its own
# layer or lower ones; each folder (and each root module) is placed, so a new one must be too.
HARNESS_LAYERS: dict[str, int] = {
    **dict.fromkeys(
        [
            "harness._check_error",
            "harness._clock",
            "harness._errors",
            "harness._escalation",
            "harness._halt",
            "harness._lazy",
            "harness._limits",
            "harness._log",
            "harness._messages",
            "harness._model",
            "harness._pause",
            "harness._pause_table",
            "harness._protected",
            "harness._protocols",
            "harness._reference",
            "harness._result",
            "harness._schema",
            "harness._secrets",
            "harness._shadowing",
            "harness._usage",
            "harness._validate",
            "harness._verification",
            "harness._work_progress",
        ],
        0,
    ),
    "harness._fs": 1,
    "harness._process": 1,
    "harness._events": 2,
    "harness._state": 3,
    "harness._policy": 3,
    "harness._tools": 4,
    "harness._checkpoints": 4,
    "harness._sinks": 4,
    "harness._fixtures": 5,
    "harness._providers": 6,
    "harness._mcp": 6,
    "harness._loop": 7,
    "harness": 8,
    "harness.checkpoints": 8,
    "harness.events": 8,
    "harness.extend": 8,
    "harness.testing": 8,
}


def _module_name(path: Path, root: Path = ROOT) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def _harness_layer(module: str) -> int | None:
    """The layer of a module of `harness` (a folder's modules share the folder's layer)."""
    parts = module.split(".")
    for end in range(len(parts), 1, -1):
        layer = HARNESS_LAYERS.get(".".join(parts[:end]))
        if layer is not None:
            return layer
    return HARNESS_LAYERS.get(module)  # the package itself: its facade


def _harness_imports(path: Path, root: Path = ROOT) -> set[str]:
    """The `harness` modules a file imports, relative imports resolved, at the top or inside
    functions (but not under `TYPE_CHECKING`, which is never run)."""
    module = _module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            for alias in node.names:
                candidate = f"{stem}.{alias.name}"
                is_module = (root / (candidate.replace(".", "/") + ".py")).exists() or (
                    root / candidate.replace(".", "/")
                ).is_dir()
                found.add(candidate if is_module else stem)
    return {name for name in found if name == "harness" or name.startswith("harness.")}


def _harness_modules(root: Path = ROOT) -> dict[str, Path]:
    return {_module_name(path, root): path for path in sorted((root / "harness").rglob("*.py"))}


def test_every_harness_module_has_a_layer() -> None:
    """A new module or folder of `harness` is placed in a layer, so the layering test covers
    it: the root holds the public faces and the values, each family a folder."""
    unplaced = [name for name in _harness_modules() if _harness_layer(name) is None]
    assert unplaced == []


def test_harness_layers_point_down() -> None:
    """A room of `harness` imports only its own layer or lower ones: the loop may use a
    model client, a model client never the loop; the values at the root use no room."""
    offenders = []
    for name, path in _harness_modules().items():
        own = _harness_layer(name)
        assert own is not None
        for imported in sorted(_harness_imports(path)):
            layer = _harness_layer(imported)
            if layer is not None and layer > own:
                offenders.append(f"{name} (layer {own}) imports {imported} (layer {layer})")
    assert offenders == []


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_inside_harness() -> None:
    """No two modules of `harness` import each other, directly or round a circle, counting
    imports inside functions too: a circle is a seam cut in the wrong place."""
    modules = _harness_modules()
    graph = {
        name: {imported for imported in _harness_imports(path) if imported in modules} - {name}
        for name, path in modules.items()
    }
    assert _circles(graph) == []


def test_the_harness_layering_test_sees_misplacements(tmp_path: Path) -> None:
    """The layer reader resolves relative imports inside functions: a model client that
    imported the session loop, as the command-line agent client once did, is refused, and a
    circle is found."""
    fake = tmp_path / "harness" / "_providers" / "_probe.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("def later():\n    from .._loop._session import Session\n", encoding="utf-8")
    (tmp_path / "harness" / "_loop").mkdir()
    (tmp_path / "harness" / "_loop" / "_session.py").write_text("", encoding="utf-8")
    imported = _harness_imports(fake, tmp_path)
    assert imported == {"harness._loop._session"}
    own = _harness_layer("harness._providers._probe")
    assert own is not None
    assert _harness_layer("harness._loop._session") == 7 > own
    assert _harness_layer("harness._new_module") is None
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


LAZY_PACKAGES = [*AUDIENCE_MODULES, "strategies.board"]


def _type_checking_imports(module_name: str) -> dict[str, str]:
    """The names a module imports under `TYPE_CHECKING`, each with its module (absolute)."""
    module = importlib.import_module(module_name)
    path = Path(module.__file__ or "")
    package = module_name if path.name == "__init__.py" else module_name.rpartition(".")[0]
    found: dict[str, str] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                if isinstance(inner, ast.ImportFrom):
                    base = package.split(".")[: len(package.split(".")) - inner.level + 1]
                    stem = ".".join([*base, inner.module or ""]) if inner.level else inner.module
                    for alias in inner.names:
                        found[alias.asname or alias.name] = str(stem)
    return found


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_lazy_tables_agree_with_their_imports_and_all(package: str) -> None:
    """A lazy name is written where type checkers read it (the `TYPE_CHECKING` imports), in
    the table `__getattr__` loads it from, and in `__all__`: the three agree, name for name
    and module for module, so one cannot be edited without the others."""
    from harness._lazy import TABLES

    module = importlib.import_module(package)
    imports = _type_checking_imports(package)
    if imports:  # a package whose `__getattr__` builds its table at the first lazy name
        getattr(module, min(imports))
    table = TABLES.get(package, {})
    resolved = {
        name: importlib.util.resolve_name(target, package) if target.startswith(".") else target
        for name, target in table.items()
    }
    assert resolved == imports
    assert set(resolved) <= set(module.__all__)


def test_the_extend_docstring_maps_every_name_by_audience() -> None:
    """`harness.extend`'s docstring sorts its names by audience: each public name is there."""
    import re

    import harness.extend

    doc = harness.extend.__doc__ or ""
    start, end = doc.index("A map by audience"), doc.index("The config-table schemas")
    assert set(re.findall(r"`([A-Za-z_]+)`", doc[start:end])) == set(harness.extend.__all__)


# The tests' floor plan: each test module sits in the folder of the package it tests
# (tests/harness/providers/ for harness/_providers/, tests/strategies/board/ for
# strategies/board/...), the real-binary tier in tests/real/; only the tests of the whole
# project (the layout, the docs, the pytest plugin, start-up) stay at the top.
TEST_FOLDERS = {
    "harness": {"providers", "tools", "mcp"},
    "checks": set(),
    "termination": set(),
    "strategies": {"cli", "hooks", "board", "viewer"},
    "real": set(),
}
TOP_LEVEL_TESTS = {
    "test_architecture.py",
    "test_docs_site.py",
    "test_docs_snippets.py",
    "test_import_laziness.py",
    "test_pytest_plugin.py",
    "test_shadowing.py",
}


def test_test_modules_live_in_the_folder_of_what_they_test() -> None:
    """A new test module goes into the folder that mirrors its package, never at the top of
    tests/ nor into a folder of no package: the tests of a family are found where it is."""
    tests = ROOT / "tests"
    misplaced = []
    for path in sorted(tests.rglob("test_*.py")):
        parts = path.relative_to(tests).parts
        if "node_modules" in parts:
            continue
        if len(parts) == 1:
            ok = parts[0] in TOP_LEVEL_TESTS
        else:
            folder, *inner = parts[:-1]
            ok = folder in TEST_FOLDERS and (
                not inner or (len(inner) == 1 and inner[0] in TEST_FOLDERS[folder])
            )
        if not ok:
            misplaced.append(str(path.relative_to(ROOT)))
    assert misplaced == []
