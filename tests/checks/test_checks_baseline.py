"""`TestSuiteCheck(baseline=True, must_pass=[...])` with a real pytest: failures that predate
the run never block, anything the agent broke does, and an unreadable listing fails closed."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from _checks_support import snapshot

from checks import TestSuiteCheck
from checks._baseline import compare, matches
from checks._test_results import TestResults
from harness import ConfigurationError
from harness.extend import Baseline, ProcessResult

pytestmark = pytest.mark.anyio

PYTEST = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider")
TESTS = """\
from calc import add, sub


def test_add():
    assert add(2, 2) == 4


def test_sub():
    assert sub(3, 1) == 2


def test_legacy():
    assert add(0.1, 0.2) == 0.3  # fails before the task began, and is not the task
"""


def project(root: Path, add: str = "a + b", sub: str = "0") -> Path:
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "test_calc.py").write_text(TESTS, encoding="utf-8")
    code(root, add, sub)
    return root


def code(root: Path, add: str, sub: str) -> None:
    (root / "calc.py").write_text(
        f"def add(a, b):\n    return {add}\n\n\ndef sub(a, b):\n    return {sub}\n",
        encoding="utf-8",
    )


def suite(flag: str = "-rA", **options: object) -> TestSuiteCheck:
    return TestSuiteCheck(
        (*PYTEST, flag, "tests"),
        baseline=True,
        env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},  # a bare pytest starts faster
        **options,  # type: ignore[arg-type]
    )


async def test_a_real_pytest_run_judged_against_its_baseline(tmp_path: Path) -> None:
    """The task is `sub`; `test_legacy` failed before it and still fails. Breaking `add`
    blocks with the old failure listed apart; fixing only `sub` is complete."""
    root = project(tmp_path)
    check = suite(must_pass=["test_sub"])
    recorded = await check.prepare(snapshot(root))
    assert recorded == Baseline(
        check=f"`{' '.join((*PYTEST, '-rA', 'tests'))}`",
        runner="pytest",
        passed=1,
        failing=("tests/test_calc.py::test_legacy", "tests/test_calc.py::test_sub"),
        exit_code=1,
    )
    code(root, "a - b", "a - b")  # sub fixed, add broken
    reason = await check.check(snapshot(root))
    assert reason is not None
    assert "tests that passed before the run no longer pass: tests/test_calc.py::test_add" in reason
    assert (
        "failing since before the run began (these do not block): "
        "tests/test_calc.py::test_legacy" in reason
    )
    assert "new failures" not in reason
    code(root, "a + b", "a - b")
    assert await check.check(snapshot(root)) is None


async def test_quiet_pytest_fails_closed_and_says_why(tmp_path: Path) -> None:
    """Quiet pytest names no passing test: the baseline cannot apply, so the exit code
    decides (the legacy failure now blocks), and the reason says so."""
    root = project(tmp_path)
    check = suite("-q")
    recorded = await check.prepare(snapshot(root))
    assert recorded is not None
    assert recorded.runner is None
    assert recorded.unreadable is not None
    assert "-v or -rA" in recorded.unreadable
    code(root, "a + b", "a - b")
    reason = await check.check(snapshot(root))
    assert reason is not None
    assert "exited with code 1" in reason
    assert "the baseline is not applied" in reason
    assert "so the exit code decides" in reason


class Answer:
    """A sandbox that answers each run with the next recorded result."""

    def __init__(self, *results: ProcessResult) -> None:
        self.results = list(results)

    async def run(
        self,
        command: str | Sequence[str],
        *,
        cwd: Path,
        timeout: float | None,  # noqa: ASYNC109 - the protocol's signature
        env: Mapping[str, str] | None = None,
        workspace: Path | None = None,
    ) -> ProcessResult:
        return self.results.pop(0)


LISTING = "t.py::test_a PASSED\nt.py::test_b FAILED\n=== 1 failed, 1 passed in 0.1s ===\n"


def listing(*lines: str, exit_code: int = 1) -> ProcessResult:
    """A recorded ``pytest -v`` run naming `lines` (``"t.py::test_a PASSED"``)."""
    passed = sum(line.endswith("PASSED") for line in lines)
    failed = sum(line.endswith("FAILED") for line in lines)
    text = "\n".join(lines) + f"\n=== {failed} failed, {passed} passed in 0.1s ===\n"
    return ProcessResult(exit_code, text, False, False, 0.1)


async def judged(
    tmp_path: Path, before: ProcessResult, after: ProcessResult, **options: object
) -> str | None:
    check = TestSuiteCheck("run-tests", baseline=True, sandbox=Answer(before, after), **options)  # type: ignore[arg-type]
    await check.prepare(snapshot(tmp_path))
    return await check.check(snapshot(tmp_path))


BEFORE = listing("t.py::test_a PASSED", "t.py::test_b FAILED")


async def test_a_deleted_test_that_passed_counts_as_broken(tmp_path: Path) -> None:
    reason = await judged(tmp_path, BEFORE, listing("t.py::test_b FAILED"))
    assert reason is not None
    assert "no longer pass: t.py::test_a" in reason


async def test_a_new_failing_test_blocks(tmp_path: Path) -> None:
    after = listing("t.py::test_a PASSED", "t.py::test_b FAILED", "t.py::test_c FAILED")
    reason = await judged(tmp_path, BEFORE, after)
    assert reason is not None
    assert "new failures: t.py::test_c" in reason
    assert "failing since before the run began (these do not block): t.py::test_b" in reason


async def test_only_old_failures_left_is_complete(tmp_path: Path) -> None:
    after = listing("t.py::test_a PASSED", "t.py::test_b FAILED", "t.py::test_c PASSED")
    assert await judged(tmp_path, BEFORE, after) is None


async def test_must_pass_tests_that_fail_or_did_not_run_block(tmp_path: Path) -> None:
    after = listing("t.py::test_a PASSED", "t.py::test_b FAILED")
    reason = await judged(tmp_path, BEFORE, after, must_pass=["test_b", "test_missing"])
    assert reason is not None
    assert "test_b (t.py::test_b failed); test_missing (did not run)" in reason


async def test_must_pass_with_unreadable_output_is_not_complete(tmp_path: Path) -> None:
    quiet = ProcessResult(0, "..\n2 passed in 0.1s\n", False, False, 0.1)
    check = TestSuiteCheck("run-tests", must_pass=["test_b"], sandbox=Answer(quiet))
    reason = await check.check(snapshot(tmp_path))
    assert reason is not None
    assert "cannot be read into test names" in reason


async def test_without_a_recorded_baseline_the_exit_code_decides(tmp_path: Path) -> None:
    """A check asked outside the run that prepared it (another run id) has no baseline."""
    check = TestSuiteCheck("run-tests", baseline=True, sandbox=Answer(BEFORE, BEFORE))
    await check.prepare(snapshot(tmp_path, run_id="one"))
    reason = await check.check(snapshot(tmp_path, run_id="two"))
    assert reason is not None
    assert "no baseline was recorded for this run" in reason


async def test_a_nonzero_exit_with_no_failing_test_blocks(tmp_path: Path) -> None:
    """Something besides a test failed (a coverage floor, a crash after the tests)."""
    done = "t.py::test_a PASSED\nt.py::test_b PASSED\n=== 2 passed in 0.1s ===\n"
    sandbox = Answer(
        ProcessResult(1, LISTING, False, False, 0.1), ProcessResult(2, done, False, False, 0.1)
    )
    check = TestSuiteCheck("run-tests", baseline=True, sandbox=sandbox)
    await check.prepare(snapshot(tmp_path))
    reason = await check.check(snapshot(tmp_path))
    assert reason is not None
    assert "although no test failed" in reason


async def test_a_timed_out_run_never_passes(tmp_path: Path) -> None:
    sandbox = Answer(
        ProcessResult(1, LISTING, False, False, 0.1), ProcessResult(-9, LISTING, True, False, 0.1)
    )
    check = TestSuiteCheck("run-tests", baseline=True, sandbox=sandbox, timeout=5)
    await check.prepare(snapshot(tmp_path))
    reason = await check.check(snapshot(tmp_path))
    assert reason is not None
    assert "did not finish within 5s" in reason


async def test_a_run_of_no_tests_never_passes(tmp_path: Path) -> None:
    sandbox = Answer(
        ProcessResult(1, LISTING, False, False, 0.1),
        ProcessResult(5, "=== no tests ran in 0.1s ===\n", False, False, 0.1),
    )
    check = TestSuiteCheck("run-tests", baseline=True, sandbox=sandbox)
    await check.prepare(snapshot(tmp_path))
    reason = await check.check(snapshot(tmp_path))
    assert reason is not None
    assert "ran no tests" in reason


def test_compare_separates_broken_new_and_predating() -> None:
    before = TestResults("x", {"a": "passed", "b": "failed", "c": "passed", "s": "skipped"})
    now = TestResults("x", {"a": "failed", "b": "failed", "s": "failed", "n": "failed"})
    result = compare(before, now, ["a", "zz"])
    assert result.broken == ("a", "c")
    assert result.new_failures == ("n", "s")
    assert result.predating == ("b",)
    assert result.unmet == ("a (a failed)", "zz (did not run)")
    assert not result.complete


@pytest.mark.parametrize(
    ("entry", "name", "expected"),
    [
        ("test_add", "tests/t.py::test_add", True),
        ("t.py::test_add", "tests/t.py::test_add", True),
        ("add", "tests/t.py::test_add", False),
        ("TestAdd", "example.com/calc.TestAdd", True),
        ("TestAdd", "example.com/calc.TestAdd/sub", False),
        ("adds", "calculator > adds", True),
    ],
)
def test_must_pass_entries_match_a_whole_trailing_name(
    entry: str, name: str, expected: bool
) -> None:
    assert matches(entry, name) is expected


def test_must_pass_entries_are_test_names() -> None:
    with pytest.raises(ConfigurationError, match="'must_pass'"):
        TestSuiteCheck("x", must_pass=[""])
