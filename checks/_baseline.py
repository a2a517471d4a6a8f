"""A test suite's baseline and the comparison a claim must pass.

A claim is complete when every test that passed at the baseline still passes (a test that
now fails, is skipped or no longer runs is *broken*), every `must_pass` test passes, and no
new failure appeared. Tests that failed at the baseline and still fail *predate* the run:
they are listed apart and do not block (unless `must_pass` names them: then they are the task).

A `must_pass` entry names a test exactly as the check reports it, or the end of that name
after a ``::``, ``.``, ``/`` or `` > `` (``test_add`` matches ``tests/test_calc.py::test_add``);
it is met when at least one test matches and every matching test passed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Generic, TypeVar

from attrs import define, field, frozen

from ._test_results import Outcome, TestResults

T = TypeVar("T")
_SEPARATORS = ("::", ".", "/", " > ")


@frozen
class SuiteBaseline:
    """The suite as the run found it: its listing, or why it could not be read."""

    command: str
    exit_code: int | None
    results: TestResults | None
    unreadable: str | None = None
    flaky: tuple[str, ...] = ()
    """Failing tests that passed when run again, alone, on the same code: flaky, neither a
    pass nor a fail."""

    @property
    def failing(self) -> tuple[str, ...]:
        return tuple(sorted(self.results.failed)) if self.results is not None else ()

    def to_json(self) -> dict[str, object]:
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "results": self.results.to_json() if self.results is not None else None,
            "unreadable": self.unreadable,
            **({"flaky": list(self.flaky)} if self.flaky else {}),
        }

    @classmethod
    def from_json(cls, data: object) -> SuiteBaseline:
        """Read what `to_json` wrote; a `ValueError` names what is wrong."""
        if not isinstance(data, dict) or not isinstance(data.get("command"), str):
            raise ValueError("a suite baseline needs a 'command' string")
        exit_code, results, unreadable = (
            data.get(k) for k in ("exit_code", "results", "unreadable")
        )
        if exit_code is not None and not isinstance(exit_code, int):
            raise ValueError(f"'exit_code' must be an integer (got {exit_code!r})")
        if unreadable is not None and not isinstance(unreadable, str):
            raise ValueError(f"'unreadable' must be a string (got {unreadable!r})")
        if results is not None and not isinstance(results, dict):
            raise ValueError(f"'results' must be an object (got {results!r})")
        flaky = data.get("flaky", [])
        if not isinstance(flaky, list) or not all(isinstance(n, str) for n in flaky):
            raise ValueError(f"'flaky' must be a list of test names (got {flaky!r})")
        listing = TestResults.from_json(results) if results is not None else None
        return cls(data["command"], exit_code, listing, unreadable, tuple(flaky))


@frozen
class Comparison:
    """How a run's listing compares with the baseline and the `must_pass` tests."""

    broken: tuple[str, ...]
    new_failures: tuple[str, ...]
    predating: tuple[str, ...]
    unmet: tuple[str, ...]
    """`must_pass` entries not met, each with why in parentheses."""
    flaky: tuple[str, ...] = ()
    """Tests of this run known to fail and pass on the same code: they block nothing and fix
    nothing (a `must_pass` one is `unmet`)."""

    @property
    def complete(self) -> bool:
        return not (self.broken or self.new_failures or self.unmet)


def matches(entry: str, name: str) -> bool:
    """Whether the `must_pass` `entry` names the test `name`."""
    return name == entry or any(name.endswith(f"{sep}{entry}") for sep in _SEPARATORS)


def compare(
    baseline: TestResults | None,
    now: TestResults,
    must_pass: Sequence[str] = (),
    flaky: frozenset[str] = frozenset(),
) -> Comparison:
    """`now` judged against `baseline` (None: no baseline, so every failure is new); the
    `flaky` tests (failed and passed on the same code) are neither broken nor new failures,
    and a `must_pass` entry naming one is not met."""
    outcomes = now.outcomes
    before = baseline.outcomes if baseline is not None else {}
    broken = sorted(
        n
        for n, o in before.items()
        if o == "passed" and outcomes.get(n) != "passed" and n not in flaky
    )
    failing = sorted(n for n, o in outcomes.items() if o == "failed")
    required = [n for n in outcomes if any(matches(entry, n) for entry in must_pass)]
    # A must_pass test that failed before the run is the task, not an old failure.
    predating = [
        n for n in failing if before.get(n) == "failed" and n not in required and n not in flaky
    ]
    new = [n for n in failing if before.get(n) not in ("failed", "passed") and n not in flaky]
    unmet: list[str] = []
    for entry in must_pass:
        named = [n for n in outcomes if matches(entry, n)]
        if not named:
            unmet.append(f"{entry} (did not run)")
        elif shaky := [n for n in named if n in flaky]:
            unmet.append(
                f"{entry} ({', '.join(shaky)} flaky: it failed and passed on the same code, "
                "so it shows nothing)"
            )
        elif not_passing := [n for n in named if outcomes[n] != "passed"]:
            unmet.append(f"{entry} ({_states(not_passing, outcomes)})")
    shown = tuple(sorted(n for n in outcomes if n in flaky))
    return Comparison(tuple(broken), tuple(new), tuple(predating), tuple(unmet), shown)


def _states(names: Iterable[str], outcomes: Mapping[str, Outcome]) -> str:
    return ", ".join(f"{n} {outcomes[n]}" for n in names)


@define
class PerRun(Generic[T]):
    """A value per run, for the newest `limit` runs only (one check may serve many runs)."""

    limit: int
    _runs: OrderedDict[str, T] = field(factory=OrderedDict)

    def remember(self, run_id: str, value: T) -> None:
        self._runs[run_id] = value
        self._runs.move_to_end(run_id)
        while len(self._runs) > self.limit:
            self._runs.popitem(last=False)

    def get(self, run_id: str) -> T | None:
        return self._runs.get(run_id)

    def __len__(self) -> int:
        return len(self._runs)
