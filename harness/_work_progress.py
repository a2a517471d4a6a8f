"""`WorkProgress`: how far the work is, as a check measured it (`done` of `total`).

A check that can count what it verifies reports it: tests passing, features passing, files
present. Ralph compares these between iterations (`done` is the score: an iteration that ends
with fewer things done than the best so far regressed), checkpoints record them, and the names
in `failing` say what broke.

Composition: `sum_of` (for `AllOf`) sums the parts, since every part has to be done;
`best_of` (for `AnyOf`) takes the alternative furthest along, since any one of them suffices.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import field, frozen

from ._check_error import CheckError
from ._errors import ConfigurationError

MIXED_UNIT = "items"


def _count(name: str) -> Any:
    def validate(_: object, __: object, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigurationError(f"{name!r} must be an int >= 0 (got {value!r})")

    return validate


def _names(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigurationError(f"'failing' must be a sequence of names (got {value!r})")
    names = tuple(value)
    for name in names:
        if not isinstance(name, str):
            raise ConfigurationError(f"'failing' must hold strings (got {name!r})")
    return names


@frozen
class WorkProgress:
    """`done` of `total` `unit` (``"tests"``, ``"features"``, ``"files"``) are done.

    `failing` names what is not done, when the check can tell (it may name fewer than
    ``total - done``: a runner's output does not always name every failure).
    """

    done: int = field(validator=_count("done"))
    total: int = field(validator=_count("total"))
    unit: str = "items"
    failing: tuple[str, ...] = field(default=(), converter=_names)

    def __attrs_post_init__(self) -> None:
        if self.done > self.total:
            raise ConfigurationError(
                f"'done' must not exceed 'total' (got {self.done} of {self.total})"
            )

    @property
    def fraction(self) -> float:
        """`done` / `total`, and 1.0 when there is nothing to do."""
        return self.done / self.total if self.total else 1.0

    @property
    def complete(self) -> bool:
        return self.done == self.total

    def describe(self) -> str:
        """``"3 of 5 tests"``."""
        return f"{self.done} of {self.total} {self.unit}"

    def ranks_below(self, other: WorkProgress) -> bool:
        """True when this is a regression from `other`: fewer things are done.

        The score is `done`, not the fraction: adding a new (still failing) test is not a
        regression, losing a passing one is.
        """
        return self.done < other.done

    def broken_since(self, earlier: WorkProgress) -> tuple[str, ...]:
        """The names failing now that were not failing in `earlier`, in this one's order."""
        before = set(earlier.failing)
        return tuple(name for name in self.failing if name not in before)

    @classmethod
    def sum_of(cls, parts: Sequence[WorkProgress | None]) -> WorkProgress | None:
        """The progress of checks that must all pass: the sums of the parts that report one
        (None when none does). The unit is theirs when they share one, else ``"items"``."""
        known = [p for p in parts if p is not None]
        if not known:
            return None
        units = {p.unit for p in known}
        return cls(
            sum(p.done for p in known),
            sum(p.total for p in known),
            units.pop() if len(units) == 1 else MIXED_UNIT,
            tuple(name for p in known for name in p.failing),
        )

    @classmethod
    def best_of(cls, parts: Sequence[WorkProgress | None]) -> WorkProgress | None:
        """The progress of alternatives of which one must pass: the one furthest along (the
        highest fraction, then the most done; the first on a tie), or None when none reports."""
        known = [p for p in parts if p is not None]
        if not known:
            return None
        return max(known, key=lambda p: (p.fraction, p.done))

    def to_dict(self) -> dict[str, Any]:
        return {
            "done": self.done,
            "total": self.total,
            "unit": self.unit,
            "failing": list(self.failing),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkProgress:
        """Read what `to_dict` wrote; anything else is a `ConfigurationError` naming the field."""
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"progress must be an object (got {data!r})")
        unit = data.get("unit", MIXED_UNIT)
        if not isinstance(unit, str):
            raise ConfigurationError(f"'unit' must be a string (got {unit!r})")
        return cls(_int(data, "done"), _int(data, "total"), unit, data.get("failing", ()))


@frozen
class Assessment:
    """A check's answer with its measure: `reason` (None: complete, else what is missing) and
    the `progress` it counted, when it can count. What `checks.MeasuresProgress.measure`
    returns and what a policy's `assess` gives a strategy."""

    reason: str | None
    progress: WorkProgress | None = None
    error: CheckError | None = None
    """Why the check could not judge the work, when it could not (it raised, or its command
    could not start); `reason` then says it too."""
    flaky: tuple[str, ...] = ()
    """Tests that failed and passed on the same code (a test suite's reruns, or earlier in
    the run): neither a pass nor a fail, reported apart."""


def _int(data: Mapping[str, Any], name: str) -> int:
    value = data.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f"{name!r} must be an int >= 0 (got {value!r})")
    return value
