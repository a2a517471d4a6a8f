"""A module of the user's that shadows one of the library's packages is refused at import.

The library is four top-level packages with common names: `harness`, `checks`, `termination`,
`strategies`. A user's own ``checks.py`` in the folder Python starts from (or on
``PYTHONPATH``) is found before the installed package, and the library then fails deep inside
with ``cannot import name 'AlwaysComplete' from 'checks'``. `refuse_shadowing` runs first
thing when `harness` is imported (every other package imports it first) and raises one
ImportError that names the file and the fix. `harness` itself shadowed by a
``harness.py`` cannot be found from here (this module is then never run): `checks` and
`termination`, which import it first, say so with the same words.

Standard library only, and cheap: a module already imported is read from `sys.modules`; one
not yet imported is looked up (`importlib.util.find_spec`), which imports nothing.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

PACKAGES = ("harness", "checks", "termination", "strategies")
"""The library's top-level packages, siblings in one folder."""

_ROOT = Path(__file__).resolve().parent.parent


def shadowed(name: str, found: str) -> ImportError:
    """The error for `found`, a module that is not the library's, imported as `name`: a plain
    ImportError (with `name` and `path`), so a traceback ends with words a user knows."""
    file = Path(found)
    stem = file.parent.name if file.name == "__init__.py" else file.stem
    return ImportError(
        f"{found} shadows completion-harness's {name!r} package: Python finds it first on "
        f"sys.path (the current folder or PYTHONPATH). Rename it (for example to "
        f"my{stem}.py, and refer to it as my{stem}:name in a spec), or run from a folder "
        "that does not hold it.",
        name=name,
        path=found,
    )


def _origin(name: str) -> str | None:
    """Where `name` is (or would be) imported from; None when it cannot be found."""
    module = sys.modules.get(name)
    if module is not None:
        return getattr(module, "__file__", None)
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return None if spec is None else spec.origin


def _ours(name: str, origin: str) -> bool:
    return Path(origin).resolve() == _ROOT / name / "__init__.py"


def refuse_shadowing(names: tuple[str, ...] = PACKAGES[1:]) -> None:
    """Raise ImportError (`shadowed`) when one of `names` resolves to a module of the user's."""
    for name in names:
        origin = _origin(name)
        if origin is not None and not _ours(name, origin):
            raise shadowed(name, origin)
