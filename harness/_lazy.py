"""Lazy package exports (PEP 562), shared by the four packages' `__init__` modules.

Optional parts (providers, sandboxes, extra sensors, strategies) load on first use, so a run
that needs none of them does not pay to import them. The same `__getattr__` keeps names that
moved or were renamed importable for one release, with a `DeprecationWarning` naming the new
home.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping, MutableMapping

TABLES: dict[str, Mapping[str, str]] = {}
"""Each package's table of lazy names, as given: the architecture test holds it against the
package's `TYPE_CHECKING` imports and `__all__`, the two other places a lazy name is written."""


def lazy_exports(
    package: str,
    namespace: MutableMapping[str, object],
    names: Mapping[str, str],
    *,
    moved: Mapping[str, str] | None = None,
    stacklevel: int = 2,
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, loading each of `names` from its module.

    `moved` maps an old name to its new home, ``"module.NewName"``: the old name still gives
    that object, with a DeprecationWarning, and is left out of `__dir__`. `stacklevel` is
    the warning's, for a package whose own `__getattr__` calls this one's.
    """
    moved = moved or {}
    TABLES[package] = names

    def __getattr__(name: str) -> object:
        target = moved.get(name)
        if target is not None:
            warnings.warn(
                f"'{package}.{name}' has moved to '{target}'; import it from there "
                "(the old name will be removed in the next release)",
                DeprecationWarning,
                stacklevel=stacklevel,
            )
            home, _, new = target.rpartition(".")
            return getattr(importlib.import_module(home), new)
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *names])

    return __getattr__, __dir__
