"""A test that lies: when a suite fails, its failing tests run again, alone, on the same tree;
a test that fails and then passes is FLAKY, neither a pass nor a fail. The flaky test here
fails one run in two, deterministically: it counts its runs in a file outside the workspace
(failing on the first, passing on the second, ...)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _checks_support import snapshot

from checks import TestSuiteCheck
from harness import ConfigurationError

pytestmark = pytest.mark.anyio

PYTEST = (sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests")
ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
FLIP = "tests/test_calc.py::test_flip"


def suite_source(counter: Path) -> str:
    return f"""\
from pathlib import Path

from calc import VALUE

COUNTER = Path({str(counter)!r})


def test_flip():
    runs = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(runs + 1))
    assert runs % 2 == 1, "fails one run in two"


def test_value():
    assert VALUE == 2


def test_fine():
    pass
"""


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    root, counter = tmp_path / "repo", tmp_path / "runs"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_calc.py").write_text(suite_source(counter))
    (root / "calc.py").write_text("VALUE = 2\n")
    return root, counter


async def test_a_test_that_fails_one_run_in_two_is_flaky_not_a_rejection_nor_a_pass(
    project: tuple[Path, Path],
) -> None:
    """The whole suite fails test_flip; run again alone it passes: FLAKY. The claim is not
    rejected for it, and its pass is not counted (2 of 3 tests, not 3)."""
    root, counter = project
    assessed = await TestSuiteCheck(PYTEST, env=ENV).measure(snapshot(root))
    assert assessed.reason is None
    assert assessed.flaky == (FLIP,)
    assert assessed.progress is not None
    assert (assessed.progress.done, assessed.progress.total) == (2, 3)
    assert counter.read_text() == "2"  # the whole run, then one rerun


async def test_a_real_failure_beside_a_flaky_one_rejects_naming_each_apart(
    project: tuple[Path, Path],
) -> None:
    root, _ = project
    (root / "calc.py").write_text("VALUE = 1\n")
    assessed = await TestSuiteCheck(PYTEST, env=ENV, baseline=False).measure(snapshot(root))
    assert assessed.reason is not None
    assert "failing: tests/test_calc.py::test_value\n" in assessed.reason
    assert "flaky, failing and passing on the same code (they neither block the claim nor " in (
        assessed.reason
    )
    assert assessed.flaky == (FLIP,)


async def test_a_flaky_must_pass_test_leaves_the_task_unverified(
    project: tuple[Path, Path],
) -> None:
    root, _ = project
    check = TestSuiteCheck(PYTEST, env=ENV, must_pass=["test_flip"])
    assessed = await check.measure(snapshot(root))
    assert assessed.reason is not None
    assert (
        f"must_pass tests not passing: test_flip ({FLIP} flaky: it failed and passed on the "
        "same code, so it shows nothing)"
    ) in assessed.reason
    # The run remembers: a later claim on which it passes at once is not verified either.
    again = await check.measure(snapshot(root))
    assert again.reason is not None
    assert f"{FLIP} failed (and flaky: it failed and passed on the same code" in again.reason
    assert again.flaky == (FLIP,)


async def test_the_baseline_reruns_its_failures_and_a_flaky_one_fixes_nothing(
    project: tuple[Path, Path],
) -> None:
    """At the baseline test_flip fails, then passes alone: flaky there. A claim where it
    passes does not count it as fixed; one where it fails is not blocked by it."""
    root, _ = project
    check = TestSuiteCheck(PYTEST, env=ENV, baseline=True)
    told = await check.prepare(snapshot(root))
    assert told is not None
    assert told.flaky == (FLIP,)  # the transcript's baseline.recorded says so too
    recorded = check.baseline_for("run-1")
    assert recorded is not None
    assert recorded.flaky == (FLIP,)
    first = await check.measure(snapshot(root))  # runs 3: it fails, and is known flaky
    assert first.reason is None
    assert first.flaky == (FLIP,)
    second = await check.measure(snapshot(root))  # runs 4: it passes, and shows nothing
    assert second.reason is None
    assert second.progress is not None
    assert second.progress.done == 2


async def test_reruns_zero_turns_it_off(project: tuple[Path, Path]) -> None:
    root, counter = project
    assessed = await TestSuiteCheck(PYTEST, env=ENV, reruns=0).measure(snapshot(root))
    assert assessed.reason is not None
    assert "failing: tests/test_calc.py::test_flip" in assessed.reason
    assert assessed.flaky == ()
    assert counter.read_text() == "1"


def test_reruns_must_be_a_count() -> None:
    with pytest.raises(ConfigurationError, match="'reruns' must be an integer >= 0"):
        TestSuiteCheck("pytest", reruns=-1)


async def test_a_run_with_a_flaky_test_is_verified_and_says_so_in_events_that_replay(
    project: tuple[Path, Path], tmp_path: Path
) -> None:
    """A whole run: the agent claims done, the suite's only failure is flaky. The claim is
    not blocked, a ``check.flaky`` event names the test before ``check.passed``, the
    transcript reads it back typed, a replay makes the same events, and the viewer shows it."""
    from harness import CheckFlaky, CheckPassed, Harness, ScriptedModelClient
    from harness.events import TranscriptReader
    from harness.testing import FakeClock, ListSink, fixture_from_transcript
    from strategies._cli import main
    from termination import TerminationPolicy

    root, _ = project
    transcript = tmp_path / "run.jsonl"

    def harness(model: ScriptedModelClient, sink: ListSink, **kw: object) -> Harness:
        return Harness(
            model=model,
            policy=TerminationPolicy(completion_check=TestSuiteCheck(PYTEST, env=ENV)),
            workspace=root,
            clock=FakeClock(),
            sinks=[sink],
            **kw,  # type: ignore[arg-type]
        )

    sink = ListSink()
    model = ScriptedModelClient.from_responses([{"text": "done"}])
    result = await harness(model, sink, transcript=transcript).run("work")
    assert result.verified
    kinds = (CheckFlaky, CheckPassed)
    said = [e for e in sink.events if isinstance(e, kinds)]
    assert [type(e) for e in said] == [CheckFlaky, CheckPassed]
    flaky = said[0]
    assert isinstance(flaky, CheckFlaky)
    assert flaky.flaky == (FLIP,)
    assert [e for _, e in TranscriptReader(transcript) if isinstance(e, kinds)] == said

    replayed = ListSink()
    lines = fixture_from_transcript(transcript)
    await harness(ScriptedModelClient.from_responses(lines), replayed).run("work")
    again = [e.replay_key() for e in replayed.events if isinstance(e, kinds)]
    assert again == [e.replay_key() for e in said]

    page = tmp_path / "run.html"
    assert main(["view", str(transcript), "-o", str(page)]) == 0
    assert "flaky tests: failed and passed on the same code" in page.read_text()


def test_harness_stats_counts_the_flaky_tests_a_run_saw(tmp_path: Path) -> None:
    """The ledger reads a ``check.flaky`` line's `flaky` list."""
    from harness import CheckFlaky, CheckPassed
    from strategies._viewer._ledger import flaky_tests

    row = CheckFlaky(1.0, "builder", 1, "suite", (FLIP,)).to_dict()
    assert flaky_tests(row) == [FLIP]
    assert flaky_tests(CheckPassed(1.0, "builder", 1, "suite").to_dict()) == []


def test_harness_check_prints_flaky_tests_apart(
    project: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness check` passes the suite whose only failure is flaky, and names it FLAKY."""
    from strategies._cli import main

    root, _ = project
    spec = tmp_path / "spec.toml"
    command = ", ".join(f'"{word}"' for word in PYTEST)
    spec.write_text(
        f'prompt = "work"\nworkspace = "{root}"\n[model]\ntype = "fixture"\npath = "x.jsonl"\n'
        f'[[checks]]\ntype = "test_suite"\ncommand = [{command}]\nreruns = 1\n'
        '[checks.env]\nPYTEST_DISABLE_PLUGIN_AUTOLOAD = "1"\n'
    )
    assert main(["check", str(spec)]) == 0
    out = capsys.readouterr().out
    assert f"FLAKY (failed and passed on the same code): {FLIP}" in out
    assert "1 passed, 0 failed, 1 flaky test" in out


def test_harness_runs_progress_says_flaky_tests_and_a_baselines_flaky_failures() -> None:
    """`harness run`'s progress lines: a ``check.flaky`` event, and a baseline whose failures
    include flaky ones."""
    from harness.events import BaselineRecorded, CheckFlaky
    from harness.extend import Baseline
    from strategies._cli._progress._display import describe

    assert describe(CheckFlaky(1.0, "builder", 2, "suite", (FLIP,))) == (
        f"flaky (failed and passed on the same code): {FLIP}",
        "warn",
    )
    baseline = Baseline("`pytest`", "pytest", 2, (FLIP, "t.py::old"), 1, flaky=(FLIP,))
    line = describe(BaselineRecorded(0.0, baseline))
    assert line is not None
    assert line[0].startswith("baseline: 2 passing, 2 failing (1 of them flaky) before")


async def test_a_restored_baseline_brings_its_flaky_tests(project: tuple[Path, Path]) -> None:
    """A stop hook's check restores the baseline another process took: the tests flaky there
    are flaky for its claims too (reported apart, though it reruns nothing itself)."""
    from checks.extend import SuiteBaseline

    root, _ = project
    first = TestSuiteCheck(PYTEST, env=ENV, baseline=True)
    await first.prepare(snapshot(root))
    recorded = first.baseline_for("run-1")
    assert recorded is not None
    second = TestSuiteCheck(PYTEST, env=ENV, baseline=True, reruns=0)
    second.restore_baseline("hook", SuiteBaseline.from_json(recorded.to_json()))
    assessed = await second.measure(snapshot(root, run_id="hook"))  # runs 3: it fails
    assert assessed.reason is None
    assert assessed.flaky == (FLIP,)
