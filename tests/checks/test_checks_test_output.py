"""`TestSuiteCheck` reasons from real runners' output (fixtures/test_output/): each failing
test named once, counts, and "no tests ran" treated as not complete for every runner."""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from _checks_support import snapshot

from checks import TestSuiteCheck, failing_tests
from checks._test_output import SuiteOutput, read_output
from harness.extend import ProcessResult

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "test_output"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


class Recorded:
    """A sandbox that answers with a runner's recorded output (and may write a report)."""

    def __init__(
        self,
        output: str,
        exit_code: int,
        *,
        truncated: bool = False,
        report: tuple[str, str] | None = None,
    ) -> None:
        self.result = ProcessResult(exit_code, output, False, truncated, 0.1)
        self.report = report

    async def run(
        self,
        command: str | Sequence[str],
        *,
        cwd: Path,
        timeout: float | None,  # noqa: ASYNC109 - the protocol's signature
        env: Mapping[str, str] | None = None,
        workspace: Path | None = None,
    ) -> ProcessResult:
        if self.report is not None:
            path, text = self.report
            (cwd / path).write_text(text, encoding="utf-8")
        return self.result


async def judge(
    workspace: Path,
    output: str,
    exit_code: int,
    *,
    truncated: bool = False,
    junit_xml: str | None = None,
    report: tuple[str, str] | None = None,
) -> str | None:
    """The reason `TestSuiteCheck("run-tests")` gives for this recorded run."""
    sandbox = Recorded(output, exit_code, truncated=truncated, report=report)
    check = TestSuiteCheck("run-tests", sandbox=sandbox, junit_xml=junit_xml)
    return await check.check(snapshot(workspace))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "pytest_failures.txt",
            SuiteOutput(
                (
                    "tests/test_calc.py::TestCalc::test_add",
                    "tests/test_calc.py::TestCalc::test_add_negative",
                    "tests/test_calc.py::TestCalc::test_broken",
                    "tests/test_calc.py::test_plain",
                ),
                "4 failed, 1 passed in 0.59s",
                True,
            ),
        ),
        (
            "pytest_collection_error.txt",
            SuiteOutput(("tests/test_bad.py",), "1 error in 0.83s", True),
        ),
        (
            "pytest_no_tests.txt",
            SuiteOutput((), None, False, "no tests ran in 0.54s"),
        ),
        (
            "pytest_deselected.txt",
            SuiteOutput((), "5 deselected in 0.62s", False, "5 deselected in 0.62s"),
        ),
        (
            "unittest_failures.txt",
            SuiteOutput(
                (
                    "tests.test_calc.TestCalc.test_broken",
                    "tests.test_calc.TestCalc.test_add",
                    "tests.test_calc.TestCalc.test_add_negative",
                ),
                "ran 4 tests: failures=2, errors=1",
                True,
            ),
        ),
        (
            "unittest_import_error.txt",
            SuiteOutput(("tests.test_bad",), "ran 1 test: errors=1", True),
        ),
        (
            "unittest_no_tests_py311.txt",
            SuiteOutput((), "ran 0 tests", False, "Ran 0 tests in 0.000s"),
        ),
        (
            "unittest_no_tests_py312.txt",
            SuiteOutput((), "ran 0 tests", False, "Ran 0 tests in 0.000s"),
        ),
        ("go_failures.txt", SuiteOutput(("TestAdd", "TestTable/negatives"), None, True)),
        ("go_verbose_failures.txt", SuiteOutput(("TestAdd", "TestTable/negatives"), None, True)),
        ("go_pass.txt", SuiteOutput((), None, True)),
        ("go_pass_cached.txt", SuiteOutput((), None, True)),
        (
            "go_no_test_files.txt",
            SuiteOutput((), None, False, "? example.com/calc [no test files]"),
        ),
        (
            "go_no_tests_to_run.txt",
            SuiteOutput((), None, False, "testing: warning: no tests to run"),
        ),
        (
            "node_tap_failures.txt",
            SuiteOutput(
                ("adds two numbers", "calculator > adds negatives"),
                "4 tests, 2 passed, 2 failed",
                True,
            ),
        ),
        (
            "node_spec_failures.txt",
            SuiteOutput(
                ("adds two numbers", "calculator > adds negatives"),
                "4 tests, 2 passed, 2 failed",
                True,
            ),
        ),
        ("node_tap_no_tests.txt", SuiteOutput((), "0 tests", False, "# tests 0")),
        ("node_spec_no_tests.txt", SuiteOutput((), "0 tests", False, "\u2139 tests 0")),
        (
            "cargo_failures.txt",
            SuiteOutput(("tests::negatives", "tests::adds_two"), "1 passed, 2 failed", True),
        ),
        (
            "cargo_terse_failures.txt",
            SuiteOutput(("tests::adds_two", "tests::negatives"), "1 passed, 2 failed", True),
        ),
        ("cargo_pass.txt", SuiteOutput((), "4 passed, 0 failed", True)),
        (
            "cargo_no_tests.txt",
            SuiteOutput((), "0 passed, 0 failed", False, "running 0 tests"),
        ),
    ],
)
def test_recorded_output_of_each_runner(name: str, expected: SuiteOutput) -> None:
    """Each runner's own output gives its failing tests (each once, never a summary line),
    its counts, and whether any test ran."""
    assert read_output(sample(name)) == expected


def test_the_unittest_summary_line_is_not_a_test_name() -> None:
    """`FAILED (failures=2, errors=1)` is unittest's summary, not a pytest-style failure."""
    assert "(failures=2, errors=1)" not in failing_tests(sample("unittest_failures.txt"))
    assert failing_tests("FAILED (errors=1)\nFAILED tests/t.py::test_a - boom") == [
        "tests/t.py::test_a"
    ]


def test_cut_off_output_never_proves_that_no_test_ran() -> None:
    """When the start of the output was dropped, a zero count at its end may be one test
    binary of several (cargo's doc-tests), so nothing is concluded."""
    assert read_output(sample("cargo_no_tests.txt"), complete=False).ran is None
    assert read_output(sample("cargo_pass.txt"), complete=False).ran is True


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "exit_code", "said"),
    [
        ("unittest_no_tests_py311.txt", 0, "Ran 0 tests in 0.000s"),
        ("unittest_no_tests_py312.txt", 5, "Ran 0 tests in 0.000s"),
        ("pytest_no_tests.txt", 5, "no tests ran in 0.54s"),
        ("go_no_test_files.txt", 0, "? example.com/calc [no test files]"),
        ("go_no_tests_to_run.txt", 0, "testing: warning: no tests to run"),
        ("node_tap_no_tests.txt", 0, "# tests 0"),
        ("node_spec_no_tests.txt", 0, "\u2139 tests 0"),
        ("cargo_no_tests.txt", 0, "running 0 tests"),
    ],
)
async def test_a_run_of_no_tests_is_not_complete(
    tmp_path: Path, name: str, exit_code: int, said: str
) -> None:
    """Whatever the runner and its exit code, a suite that ran nothing is not complete."""
    reason = await judge(tmp_path, sample(name), exit_code)
    assert reason is not None
    code = f"exit code {exit_code}; " if exit_code else ""
    assert reason.splitlines()[0] == (
        f"`run-tests` ran no tests ({code}its output says `{said}`); a suite that runs "
        "nothing does not show the work is done"
    )


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["go_pass.txt", "go_pass_cached.txt", "cargo_pass.txt"])
async def test_a_passing_run_with_empty_packages_completes(tmp_path: Path, name: str) -> None:
    """Packages without tests beside ones with passing tests ([no test files], cargo's empty
    doc-tests) do not make a passing run fail."""
    assert await judge(tmp_path, sample(name), 0) is None


@pytest.mark.anyio
async def test_cut_off_output_with_exit_zero_completes(tmp_path: Path) -> None:
    """A zero count at the end of a truncated output is not proof that nothing ran."""
    assert await judge(tmp_path, sample("cargo_no_tests.txt"), 0, truncated=True) is None


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "exit_code", "headline", "failing"),
    [
        (
            "unittest_failures.txt",
            1,
            "`run-tests` exited with code 1 (ran 4 tests: failures=2, errors=1)",
            "failing: tests.test_calc.TestCalc.test_broken, tests.test_calc.TestCalc.test_add, "
            "tests.test_calc.TestCalc.test_add_negative",
        ),
        (
            "node_tap_failures.txt",
            1,
            "`run-tests` exited with code 1 (4 tests, 2 passed, 2 failed)",
            "failing: adds two numbers, calculator > adds negatives",
        ),
        (
            "node_spec_failures.txt",
            1,
            "`run-tests` exited with code 1 (4 tests, 2 passed, 2 failed)",
            "failing: adds two numbers, calculator > adds negatives",
        ),
        (
            "cargo_failures.txt",
            101,
            "`run-tests` exited with code 101 (1 passed, 2 failed)",
            "failing: tests::negatives, tests::adds_two",
        ),
        (
            "go_failures.txt",
            1,
            "`run-tests` exited with code 1",
            "failing: TestAdd, TestTable/negatives",
        ),
    ],
)
async def test_failures_are_named_from_each_runners_output(
    tmp_path: Path, name: str, exit_code: int, headline: str, failing: str
) -> None:
    """The reason's first lines: how the run failed with the runner's counts, then the
    failing tests, each once."""
    reason = await judge(tmp_path, sample(name), exit_code)
    assert reason is not None
    assert reason.splitlines()[:3] == [headline, failing, "the end of its output:"]


@pytest.mark.anyio
async def test_a_junit_report_names_each_failure_once(tmp_path: Path) -> None:
    """With a fresh report, its names are the list: pytest's own names for the same tests
    (tests/test_calc.py::TestCalc::test_add beside tests.test_calc.TestCalc.test_add) are not
    added a second time."""
    report = ("report.xml", sample("pytest_failures_junit.xml"))
    reason = await judge(
        tmp_path, sample("pytest_failures.txt"), 1, junit_xml="report.xml", report=report
    )
    assert reason is not None
    assert reason.splitlines()[1] == (
        "failing: tests.test_calc.TestCalc.test_add, tests.test_calc.TestCalc.test_add_negative, "
        "tests.test_calc.TestCalc.test_broken, tests.test_calc.test_plain"
    )


@pytest.mark.anyio
async def test_no_output_stays_on_the_first_line(tmp_path: Path) -> None:
    """A command that printed nothing says so on its first line, never glued to the last name
    of the failing list."""
    report = ("report.xml", sample("node_failures_junit.xml"))
    reason = await judge(tmp_path, "", 1, junit_xml="report.xml", report=report)
    assert reason == (
        "`run-tests` exited with code 1 (no output)\n"
        "failing: test.adds two numbers, test.adds negatives"
    )


@pytest.mark.anyio
async def test_a_junit_report_without_test_cases_is_not_complete(tmp_path: Path) -> None:
    """A fresh report with no test cases means nothing ran, even with exit code 0."""
    report = ("r.xml", '<testsuites name="empty"></testsuites>')
    reason = await judge(tmp_path, "", 0, junit_xml="r.xml", report=report)
    assert reason == (
        "`run-tests` ran no tests (its JUnit report r.xml lists no test cases); a suite that "
        "runs nothing does not show the work is done (no output)"
    )


NODE_TESTS = """\
const { test, describe, it } = require('node:test');
const assert = require('node:assert');

function add(a, b) { return a - b; }

test('adds two numbers', () => { assert.strictEqual(add(2, 2), 4); });
test('zero is neutral', () => { assert.strictEqual(add(0, 0), 0); });
describe('calculator', () => {
  it('adds negatives', () => { assert.strictEqual(add(-1, -1), -2); });
  it('subtracts', () => { assert.strictEqual(add(3, 0), 3); });
});
"""


@pytest.mark.anyio
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
async def test_a_real_node_test_run(tmp_path: Path) -> None:
    """`node --test` through the local sandbox: its default reporter's failures are named, and
    a folder without test files (exit 0, `# tests 0`) is not complete."""
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "calc.test.js").write_text(NODE_TESTS)
    reason = await TestSuiteCheck("node --test").check(snapshot(tmp_path))
    assert reason is not None
    assert reason.splitlines()[:2] == [
        "`node --test` exited with code 1 (4 tests, 2 passed, 2 failed)",
        "failing: adds two numbers, calculator > adds negatives",
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    reason = await TestSuiteCheck("node --test").check(snapshot(empty))
    assert reason is not None
    assert reason.startswith("`node --test` ran no tests (its output says `")


@pytest.mark.anyio
async def test_a_real_unittest_run_of_no_tests(tmp_path: Path) -> None:
    """`python -m unittest` in a folder without tests exits 0 before Python 3.12 and 5 from
    3.12 on: not complete either way."""
    command = (sys.executable, "-m", "unittest")
    reason = await TestSuiteCheck(command).check(snapshot(tmp_path))
    assert reason is not None
    assert "ran no tests (" in reason.splitlines()[0]
    assert "its output says `Ran 0 tests in " in reason
    (tmp_path / "test_ok.py").write_text(
        textwrap.dedent(
            """\
            import unittest

            class T(unittest.TestCase):
                def test_ok(self):
                    self.assertTrue(True)
            """
        )
    )
    assert await TestSuiteCheck(command).check(snapshot(tmp_path)) is None


def test_errored_tests_and_collection_errors_are_told_from_failures() -> None:
    """pytest's ERROR lines (a fixture that raised) and unittest's ERROR headers are errors, a
    FAILED line is not; a module that cannot be imported is a collection error."""
    from checks._test_output import collection_failed, errored_tests

    pytest_output = textwrap.dedent(
        """\
        t.py::test_a FAILED                                                      [ 50%]
        t.py::test_b ERROR                                                       [100%]
        =========================== short test summary info ============================
        FAILED t.py::test_a - assert 1 == 2
        ERROR t.py::test_c - RuntimeError: no database
        ========================= 1 failed, 2 errors in 0.02s =========================
        """
    )
    assert errored_tests(pytest_output) == {"t.py::test_b", "t.py::test_c"}
    assert not collection_failed(pytest_output)
    unittest_output = (
        "ERROR: test_x (tests.test_m.T.test_x)\nFAIL: test_y (tests.test_m.T.test_y)\n"
    )
    assert errored_tests(unittest_output) == {"tests.test_m.T.test_x"}
    collecting = "ERROR test_calc.py\n!!!! Interrupted: 1 error during collection !!!!\n"
    assert collection_failed(collecting)
    assert collection_failed("ERROR: test_m (unittest.loader._FailedTest.test_m)\n")
    assert collection_failed("FAIL\texample.com/calc [build failed]")
