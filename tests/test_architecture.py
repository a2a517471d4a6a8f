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


@pytest.mark.parametrize("package", LAYERS)
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


@pytest.mark.parametrize("package", LAYERS)
def test_unknown_names_raise_attribute_error(package: str) -> None:
    """Lazy exports do not swallow typos: an unknown name is an AttributeError naming it."""
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = module.no_such_name
    assert set(module.__all__) <= set(dir(module))
