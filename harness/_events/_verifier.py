"""The verifier's events: a check's baseline, the protected paths recorded, and a change to them."""

from __future__ import annotations

from typing import ClassVar, cast

from attrs import frozen

from .._protected import Change, Tampering
from .._verification import Baseline
from ._base import Event, Fields, reads


@frozen
class BaselineRecorded(Event):
    """A check recorded its baseline before the agent's first turn."""

    name: ClassVar[str] = "baseline.recorded"
    baseline: Baseline


@frozen
class ProtectedPathsRecorded(Event):
    """The protected paths were recorded: `files` paths matched the `rules`."""

    name: ClassVar[str] = "protected.recorded"
    level: ClassVar[str] = "debug"
    rules: tuple[str, ...]
    files: int


@frozen
class ProtectedPathsChanged(Event):
    """A claim found protected paths changed since the run started (by any route)."""

    name: ClassVar[str] = "protected.changed"
    level: ClassVar[str] = "warning"
    agent: str
    turn: int
    changes: tuple[Tampering, ...]


def _names_of(f: Fields, key: str) -> tuple[str, ...]:
    names = f.get(key, list, "a list of names", ())
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise f.error(f"{key}[{index}]", f"expected a string (got {name!r:.60})")
    return tuple(names)


@reads(Baseline)
def _baseline(f: Fields) -> Baseline:
    return Baseline(
        f.text("check"),
        f.text("runner", None),
        f.integer("passed", 0),
        _names_of(f, "failing"),
        f.integer("exit_code", None),
        f.text("unreadable", None),
        _names_of(f, "excused"),
        _names_of(f, "flaky"),
    )


_CHANGES = ("modified", "deleted", "added", "replaced")


@reads(Tampering)
def _tampering(f: Fields) -> Tampering:
    change = f.text("change")
    if change not in _CHANGES:
        raise f.error("change", f"expected one of {', '.join(_CHANGES)} (got {change!r:.60})")
    return Tampering(f.text("path"), cast(Change, change), f.text("rule"))
