"""What the run records about its verifier: the checks' baselines and the protected paths.

A check that records a baseline before the agent's first turn (`TestSuiteCheck` with
``baseline=True``) returns a `Baseline` from its ``prepare``; the run emits it as a
``baseline.recorded`` event and lists it on `RunResult.baselines`, so the failures that
predate the task are on the record. The protected paths are recorded at the same moment
(``protected.recorded``), and every claim that finds them changed emits
``protected.changed`` naming each `Tampering`, also listed on `RunResult.tampering`.
"""

from __future__ import annotations

from typing import Any

from attrs import field, frozen


def _names(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value)


@frozen
class Baseline:
    """A check's reading of the work as the run found it.

    `check` says what ran (a command), `runner` whose output was read (None when it could not
    be read into test names: `unreadable` says why), `passed` how many tests passed and
    `failing` the tests that failed before the agent did anything. `excused` are those of them
    the check will never hold against the agent, although the task may be about one of them:
    a check that takes a baseline and names no test that must pass excuses every failing test,
    and the run warns before the first turn (`excused_warning`). `flaky` are those of the
    failing tests that passed when run again on the same code (neither a pass nor a fail).
    """

    check: str
    runner: str | None
    passed: int
    failing: tuple[str, ...] = field(default=(), converter=_names)
    exit_code: int | None = None
    unreadable: str | None = None
    excused: tuple[str, ...] = field(default=(), converter=_names)
    flaky: tuple[str, ...] = field(default=(), converter=_names)

    def excused_warning(self) -> str | None:
        """What the run says before the first turn when tests are excused, None when none is."""
        if not self.excused:
            return None
        count = len(self.excused)
        tests = "test fails" if count == 1 else "tests fail"
        shown = ", ".join(self.excused[:5]) + (f" and {count - 5} more" if count > 5 else "")
        return (
            f"{count} {tests} before the first turn and will never block a claim, since "
            f"{self.check} takes a baseline and names no must_pass test: {shown}. If the task "
            "is to make one pass, name it in the check's must_pass."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "runner": self.runner,
            "passed": self.passed,
            "failing": list(self.failing),
            "exit_code": self.exit_code,
            "unreadable": self.unreadable,
            "excused": list(self.excused),
            **({"flaky": list(self.flaky)} if self.flaky else {}),
        }
