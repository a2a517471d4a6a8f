"""Progress: the standard checks say how far the work is (`done` of `total`), composition sums
or picks the best, and `run_check` puts it on the verdict, failing closed as ever."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _checks_support import snapshot
from attrs import frozen
from hypothesis import given
from hypothesis import strategies as st

from checks import (
    AllOf,
    AnyOf,
    Assessment,
    FeatureListCheck,
    FilesCheck,
    MeasuresProgress,
    TestSuiteCheck,
    WorkProgress,
    run_check,
)
from checks._suite_tally import Tally, tally
from harness import ConfigurationError, SessionStateSnapshot

OUTPUTS = Path(__file__).resolve().parents[2] / "fixtures" / "test_output"
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")

pytestmark = pytest.mark.anyio


async def assess(check: object, state: SessionStateSnapshot) -> Assessment:
    """What `run_check` makes of `check`: its reason and its progress."""
    verdict = await run_check(check, state)  # type: ignore[arg-type]
    return Assessment(verdict.reason, verdict.progress)


@frozen
class Measured:
    """A check with a fixed answer and progress."""

    reason: str | None
    progress: WorkProgress | None

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return self.reason

    async def measure(self, state: SessionStateSnapshot) -> Assessment:
        return Assessment(self.reason, self.progress)

    def description(self) -> str:
        return "measured"


class Plain:
    """A check that cannot measure."""

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return "plain says no"

    def description(self) -> str:
        return "plain"


class Broken:
    """A check whose measure raises."""

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return None

    async def measure(self, state: SessionStateSnapshot) -> Assessment:
        raise RuntimeError("no disk")

    def description(self) -> str:
        return "broken"


def test_progress_values_validate_and_compare() -> None:
    """Counts are ints >= 0 with done <= total; the score is `done`; broken names are new."""
    best = WorkProgress(3, 4, "tests", ("t4",))
    now = WorkProgress(2, 5, "tests", ("t1", "t4", "t5"))
    assert now.describe() == "2 of 5 tests"
    assert now.ranks_below(best)
    assert not best.ranks_below(now)
    assert now.broken_since(best) == ("t1", "t5")
    assert WorkProgress(0, 0).fraction == 1.0
    assert WorkProgress.from_dict(now.to_dict()) == now
    for bad in ({"done": -1, "total": 2}, {"done": 3, "total": 2}, {"done": True, "total": 2}):
        with pytest.raises(ConfigurationError, match="'done'"):
            WorkProgress.from_dict(bad)
    with pytest.raises(ConfigurationError, match="'failing' must hold strings"):
        WorkProgress(1, 2, failing=(3,))


@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=5))
def test_sum_of_adds_and_best_of_is_order_independent(pairs: list[tuple[int, int]]) -> None:
    """All-of sums every part; any-of's pick does not depend on the order of the parts."""
    parts = [WorkProgress(min(d, t), max(d, t), "tests") for d, t in pairs]
    summed = WorkProgress.sum_of([*parts, None])
    assert summed is not None
    assert (summed.done, summed.total) == (sum(p.done for p in parts), sum(p.total for p in parts))
    best = WorkProgress.best_of(parts)
    assert best is not None
    key = (best.fraction, best.done)
    assert WorkProgress.best_of(list(reversed(parts))) is not None
    assert all((p.fraction, p.done) <= key for p in parts)
    assert WorkProgress.sum_of([None]) is None
    assert WorkProgress.best_of([]) is None


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ("pytest_failures.txt", Tally(1, 5)),
        ("pytest_collection_error.txt", Tally(0, 1)),
        ("unittest_failures.txt", Tally(1, 4)),
        ("cargo_failures.txt", Tally(1, 3)),
        ("cargo_pass.txt", Tally(4, 4)),
        ("go_verbose_failures.txt", Tally(2, 5)),
        ("go_failures.txt", None),  # without -v, passing tests are not named
        ("node_tap_failures.txt", Tally(2, 4)),
        ("node_spec_failures.txt", Tally(2, 4)),
        ("pytest_no_tests.txt", None),
    ],
)
def test_runner_counts_are_read(sample: str, expected: Tally | None) -> None:
    """pytest, unittest, cargo, go -v and node counts give tests passing of those that ran."""
    assert tally((OUTPUTS / sample).read_text()) == expected


def project(folder: Path, tests: str) -> Path:
    folder.mkdir()
    (folder / "test_sample.py").write_text(tests)
    return folder


async def test_a_real_pytest_run_reports_tests_passing_and_the_failing_names(
    tmp_path: Path,
) -> None:
    """2 of 3 tests pass: the progress says so and names the failing one."""
    ws = project(
        tmp_path / "ws",
        "def test_a():\n    assert True\n\ndef test_b():\n    assert True\n\n"
        "def test_c():\n    assert False\n",
    )
    answer = await assess(TestSuiteCheck(PYTEST), snapshot(ws))
    assert answer.reason is not None
    assert answer.progress == WorkProgress(2, 3, "tests", ("test_sample.py::test_c",))
    (ws / "test_sample.py").write_text("def test_a():\n    assert True\n")
    assert await assess(TestSuiteCheck(PYTEST), snapshot(ws)) == Assessment(
        None, WorkProgress(1, 1, "tests")
    )


async def test_features_and_files_report_what_is_done(tmp_path: Path) -> None:
    """Features passing of the list; files present of those required; and an AllOf sums."""
    ws = tmp_path / "ws"
    ws.mkdir()
    features = [
        {"name": "mean", "passes": True},
        {"name": "median", "passes": False},
        {"name": "mode", "passes": False},
    ]
    (ws / "feature_list.json").write_text(json.dumps(features))
    (ws / "stats.py").write_text("x")
    state = snapshot(ws)
    listed = await assess(FeatureListCheck(), state)
    assert listed.progress == WorkProgress(1, 3, "features", ("median", "mode"))
    files = await assess(FilesCheck(["stats.py", "README.md"]), state)
    assert files.progress == WorkProgress(1, 2, "files", ("README.md",))
    both = await assess(
        AllOf.of(FilesCheck(["stats.py", "README.md"]), FeatureListCheck(), progress=True), state
    )
    assert both.progress == WorkProgress(2, 5, "items", ("README.md", "median", "mode"))
    assert both.reason == files.reason


async def test_composition_measures_every_part_of_an_all_and_the_best_alternative(
    tmp_path: Path,
) -> None:
    """AllOf with progress asked for measures all its parts (the first reason is the verdict);
    AnyOf reports the alternative furthest along, or the one that passed; parts that cannot
    measure count none."""
    state = snapshot(tmp_path)
    low = Measured("low", WorkProgress(1, 4, "tests"))
    high = Measured("high", WorkProgress(3, 4, "tests"))
    done = Measured(None, WorkProgress(2, 2, "features"))
    assert isinstance(AllOf.of(low, high), MeasuresProgress)
    every = await assess(AllOf.of(Plain(), low, high, progress=True), state)
    assert every == Assessment("plain says no", WorkProgress(4, 8, "tests"))
    anyone = await assess(AnyOf.of(low, high, Plain()), state)
    assert anyone.progress == WorkProgress(3, 4, "tests")
    assert anyone.reason is not None
    assert anyone.reason.startswith("none of the 3 alternatives holds:")
    assert await assess(AnyOf.of(low, done), state) == Assessment(None, done.progress)
    assert await assess(Plain(), state) == Assessment("plain says no")


async def test_a_measure_that_fails_is_a_reason_and_no_progress(tmp_path: Path) -> None:
    """Fail closed: an exception, a wrong type or an empty reason is never "complete"."""
    state = snapshot(tmp_path)
    answer = await assess(Broken(), state)
    assert answer == Assessment("the completion check Broken failed with RuntimeError: no disk")
    blank = await assess(Measured("  ", WorkProgress(1, 2)), state)
    assert blank.reason == "the completion check Measured returned an empty reason"
    inside = await assess(
        AllOf.of(Broken(), Measured(None, WorkProgress(1, 1)), progress=True), state
    )
    assert inside.reason == answer.reason  # a part that cannot judge: nor can the whole
    assert inside.progress is None


async def test_an_all_of_run_by_the_loop_stops_at_the_first_reason(tmp_path: Path) -> None:
    """The one rule: asked through `run_check` (as the loop, `harness check` and the hooks
    ask), an AllOf stops at the first reason and the checks after it do not run, even when
    they could measure; only with progress asked for does every part run."""
    asked: list[str] = []

    class Counting:
        def __init__(self, name: str, reason: str | None) -> None:
            self.name, self.reason = name, reason

        async def check(self, state: SessionStateSnapshot) -> str | None:
            return (await self.measure(state)).reason

        async def measure(self, state: SessionStateSnapshot) -> Assessment:
            asked.append(self.name)
            return Assessment(self.reason, WorkProgress(0, 1))

        def description(self) -> str:
            return self.name

    first, second = Counting("first", "first says no"), Counting("second", "second says no")
    verdict = await run_check(AllOf.of(first, second), snapshot(tmp_path))
    assert (verdict.reason, verdict.progress, asked) == ("first says no", None, ["first"])
    asked.clear()
    whole = await run_check(AllOf.of(first, second, progress=True), snapshot(tmp_path))
    assert (whole.reason, whole.progress, asked) == (
        "first says no",
        WorkProgress(0, 2),
        ["first", "second"],
    )
