"""Each test's pass/fail history in one run, and the tests it shows to be flaky.

A test that failed and then passed on the same code (a rerun of a failure, alone, on the same
tree) is flaky: it is neither a pass nor a fail. `TestSuiteCheck` keeps a `TestHistory` per
run, starting from its baseline's flaky tests, so that a later claim is judged on what the
run has seen: a test once flaky in the run stays flaky (a pass of it fixes nothing, a failure
of it blocks nothing, and a `must_pass` test among them leaves the task unverified).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from attrs import field, frozen

_KEPT = 16  # outcomes kept per test: the latest


def _history(value: Mapping[str, tuple[str, ...]]) -> Mapping[str, tuple[str, ...]]:
    return dict(value)


@frozen
class TestHistory:
    """Each test's outcomes in the run so far, oldest first ("passed" or "failed"; a rerun
    adds its own), and the tests seen to fail and pass on the same code."""

    __test__ = False  # not a pytest test class, despite the name

    outcomes: Mapping[str, tuple[str, ...]] = field(factory=dict, converter=_history, hash=False)
    flaky: frozenset[str] = frozenset()

    def seen(self, outcomes: Mapping[str, str], flaky: Iterable[str] = ()) -> TestHistory:
        """This history with one more run's `outcomes` (a rerun's too) and the tests it found
        `flaky`."""
        kept = dict(self.outcomes)
        for name, outcome in outcomes.items():
            if outcome in ("passed", "failed"):
                kept[name] = (*kept.get(name, ()), outcome)[-_KEPT:]
        return TestHistory(kept, self.flaky | frozenset(flaky))
