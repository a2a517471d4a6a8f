"""`TestSuiteCheck`'s fast half: a claim first runs the tests that failed at the last verdict
and the `must_pass` ones, by name; one still failing rejects at once, and only the whole
suite accepts. Every test here writes its name to a log outside the workspace, so what ran
is read from the log, not guessed from timing. The flaky reruns, which would add runs to the
log, are off here (`reruns=0`; tests/checks/test_checks_flaky.py has them)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _checks_support import snapshot

from checks import TestSuiteCheck
from checks.extend import LastVerdict

pytestmark = pytest.mark.anyio

PYTEST = (sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests")
ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def suite_source(log: Path) -> str:
    return f"""\
from pathlib import Path

from calc import VALUE


def ran(name):
    with Path({str(log)!r}).open("a") as log:
        log.write(name + "\\n")


def test_value():
    ran("test_value")
    assert VALUE == 2


def test_other():
    ran("test_other")
    assert Path("other_ok").exists()


def test_legacy():
    ran("test_legacy")
    assert False, "failing before the task began"


def test_fine():
    ran("test_fine")
"""


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    root, log = tmp_path / "repo", tmp_path / "ran.log"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_calc.py").write_text(suite_source(log))
    (root / "calc.py").write_text("VALUE = 0\n")
    (root / "other_ok").write_text("")
    return root, log


def ran(log: Path) -> list[str]:
    """The tests that ran since the last call, and the log emptied."""
    names = log.read_text().split() if log.exists() else []
    log.write_text("")
    return sorted(names)


async def test_a_test_still_failing_rejects_without_the_rest_of_the_suite(
    project: tuple[Path, Path],
) -> None:
    """The second claim runs only test_value (failed at the last verdict); it still fails,
    so the claim is rejected naming it and what ran, and no other test ran."""
    root, log = project
    check = TestSuiteCheck(PYTEST, env=ENV, reruns=0)
    first = await check.measure(snapshot(root))
    assert first.reason is not None
    assert ran(log) == ["test_fine", "test_legacy", "test_other", "test_value"]
    second = await check.measure(snapshot(root))
    assert ran(log) == ["test_value"]
    assert second.reason is not None
    assert "still fails 1 of the tests run first" in second.reason
    assert (
        "tests that failed at the last verdict still fail: tests/test_calc.py::test_value"
        in second.reason
    )
    assert "the whole suite runs once they pass" in second.reason
    assert "-k '(test_calc.py and test_legacy) or (test_calc.py and test_value)'" in second.reason
    assert second.progress is None  # a few tests say nothing of the rest


async def test_selected_tests_that_pass_never_accept_alone(project: tuple[Path, Path]) -> None:
    """When the tests that failed pass now, the whole suite runs, and a test broken since the
    last verdict (test_other) rejects the claim: the fast half never accepts. test_legacy,
    failing since the baseline, is never run first."""
    root, log = project
    check = TestSuiteCheck(PYTEST, env=ENV, reruns=0, baseline=True)
    (root / "calc.py").write_text("VALUE = 2\n")
    await check.prepare(snapshot(root))
    (root / "calc.py").write_text("VALUE = 1\n")
    assert (await check.check(snapshot(root))) is not None
    ran(log)
    (root / "calc.py").write_text("VALUE = 2\n")
    (root / "other_ok").unlink()
    reason = await check.check(snapshot(root))
    assert ran(log) == ["test_fine", "test_legacy", "test_other", "test_value", "test_value"]
    assert reason is not None
    assert "tests that passed before the run no longer pass: tests/test_calc.py::test_other" in (
        reason
    )
    assert "(first ran only: tests/test_calc.py::test_value passed)" in reason
    (root / "other_ok").write_text("")
    assert await check.check(snapshot(root)) is None
    assert ran(log) == ["test_fine", "test_legacy", "test_other", "test_other", "test_value"]


async def test_must_pass_tests_run_first_from_the_first_claim(
    project: tuple[Path, Path],
) -> None:
    """With a baseline, the first claim already runs the must_pass test first, though it
    failed at the baseline (it is the task)."""
    root, log = project
    check = TestSuiteCheck(PYTEST, env=ENV, reruns=0, baseline=True, must_pass=["test_value"])
    await check.prepare(snapshot(root))
    ran(log)
    reason = await check.check(snapshot(root))
    assert ran(log) == ["test_value"]
    assert reason is not None
    assert "must_pass tests not passing: test_value (tests/test_calc.py::test_value failed)" in (
        reason
    )


async def test_fast_reject_false_runs_the_whole_suite(project: tuple[Path, Path]) -> None:
    root, log = project
    check = TestSuiteCheck(PYTEST, env=ENV, reruns=0, fast_reject=False)
    await check.check(snapshot(root))
    ran(log)
    await check.check(snapshot(root))
    assert ran(log) == ["test_fine", "test_legacy", "test_other", "test_value"]


async def test_each_run_keeps_its_own_last_verdict(project: tuple[Path, Path]) -> None:
    """A run that has no verdict yet runs the whole suite, whatever another run found."""
    root, log = project
    check = TestSuiteCheck(PYTEST, env=ENV, reruns=0)
    await check.check(snapshot(root, run_id="one"))
    ran(log)
    await check.check(snapshot(root, run_id="two"))
    assert ran(log) == ["test_fine", "test_legacy", "test_other", "test_value"]


async def test_a_selection_that_runs_nothing_falls_through_to_the_whole_suite(
    project: tuple[Path, Path],
) -> None:
    """A test renamed since the last verdict is not found by name: nothing fails in the fast
    half, so the whole suite decides."""
    root, log = project
    check = TestSuiteCheck(PYTEST, env=ENV, reruns=0)
    await check.check(snapshot(root))
    test_file = root / "tests" / "test_calc.py"
    test_file.write_text(
        test_file.read_text()
        .replace("def test_value", "def test_renamed")
        .replace("def test_legacy", "def test_old")
    )
    ran(log)
    reason = await check.check(snapshot(root))
    assert ran(log) == ["test_fine", "test_legacy", "test_other", "test_value"]
    assert reason is not None
    assert "tests/test_calc.py::test_renamed" in reason


async def test_tests_that_could_not_be_collected_are_never_said_to_pass(
    project: tuple[Path, Path],
) -> None:
    """calc.py turned into a syntax error: the tests run first cannot be collected, so the
    fast half hands over to the whole suite, whose rejection says they were not collected,
    never that they pass."""
    root, log = project
    check = TestSuiteCheck(PYTEST, env=ENV, reruns=0, must_pass=["test_value"])
    assert await check.check(snapshot(root)) is not None
    (root / "calc.py").write_text("def broken(:\n")
    ran(log)
    reason = await check.check(snapshot(root))
    assert ran(log) == []
    assert reason is not None
    assert "they pass now" not in reason
    assert (
        "(first ran only: tests/test_calc.py::test_legacy not collected, "
        "tests/test_calc.py::test_value not collected; some tests could not be collected"
    ) in reason


async def test_a_selection_stopped_at_its_first_failure_says_what_did_not_run(
    project: tuple[Path, Path],
) -> None:
    """-x stops after test_value fails: test_legacy, selected too, is said not to have run."""
    root, _ = project
    check = TestSuiteCheck(PYTEST, env=ENV, reruns=0)
    await check.check(snapshot(root))
    reason = await check.check(snapshot(root))
    assert reason is not None
    assert (
        "tests/test_calc.py::test_legacy not run, tests/test_calc.py::test_value failed; "
        "the whole suite runs once they pass)"
    ) in reason


async def test_a_last_verdict_kept_as_data_starts_another_checks_claim(
    project: tuple[Path, Path],
) -> None:
    """What one check's whole run found, written out and read back (as the stop hooks keep
    it between processes), makes a new check's first claim run the fast half; a passing
    whole run is kept as a verdict with no failure, which runs nothing first."""
    root, log = project
    first = TestSuiteCheck(PYTEST, env=ENV, reruns=0)
    assert first.last_verdict_for("run-1") is None
    await first.check(snapshot(root))
    kept = first.last_verdict_for("run-1")
    assert kept is not None
    assert kept.failing == ("tests/test_calc.py::test_legacy", "tests/test_calc.py::test_value")
    assert "tests/test_calc.py::test_fine" in kept.names
    ran(log)
    second = TestSuiteCheck(PYTEST, env=ENV, reruns=0)
    second.restore_last_verdict(
        "run-1", LastVerdict.from_json(json.loads(json.dumps(kept.to_json())))
    )
    reason = await second.check(snapshot(root))
    assert ran(log) == ["test_value"]  # the first to fail stops the selection (-x)
    assert reason is not None
    assert "still fails 1 of the tests run first" in reason
    passing = TestSuiteCheck((*PYTEST, "-k", "test_fine"), env=ENV)
    await passing.check(snapshot(root))
    assert passing.last_verdict_for("run-1") == LastVerdict(
        f"{' '.join(PYTEST)} -k test_fine", (), ("tests/test_calc.py::test_fine",)
    )


def test_a_last_verdict_of_another_command_or_malformed_is_refused() -> None:
    check = TestSuiteCheck("pytest -rA")
    with pytest.raises(
        ValueError, match="it is the last verdict of `make test`, not of `pytest -rA`"
    ):
        check.restore_last_verdict("run-1", LastVerdict("make test", ("t",), ()))
    assert check.last_verdict_for("run-1") is None
    with pytest.raises(ValueError, match="'names' must be a list of test names"):
        LastVerdict.from_json({"command": "pytest -rA", "failing": [], "names": [""]})
    with pytest.raises(ValueError, match="needs a 'command' string"):
        LastVerdict.from_json(["pytest"])
