"""`CommandCheck` and `TestSuiteCheck` on the local sandbox: real commands, real pytest runs."""

from __future__ import annotations

import importlib.util
import os
import py_compile
import sys
import textwrap
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from _checks_support import as_clock, snapshot

from checks import CommandCheck, LocalSandbox, TestSuiteCheck, failing_tests
from harness import ConfigurationError
from harness.testing import FakeClock

pytestmark = pytest.mark.anyio

PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")

PASSING = """
def test_add():
    assert 1 + 1 == 2
"""
FAILING = """
def test_add():
    assert 1 + 1 == 2

def test_sub():
    assert 2 - 1 == 0

def test_mul():
    raise RuntimeError("boom")
"""


def _project(root: Path, source: str) -> Path:
    root.mkdir(exist_ok=True)
    (root / "test_sample.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return root


async def test_command_exit_zero_is_complete(tmp_path: Path) -> None:
    """A verify command that exits 0 completes the check."""
    assert await CommandCheck("test -f built.txt || exit 0").check(snapshot(tmp_path)) is None


async def test_command_failure_names_exit_code_and_output(tmp_path: Path) -> None:
    """A failing command's reason has its exit code and the end of its output."""
    check = CommandCheck("echo 'missing: dist/app.whl' >&2; exit 2", what="The build is done")
    reason = await check.check(snapshot(tmp_path))
    assert reason == (
        "`echo 'missing: dist/app.whl' >&2; exit 2` exited with code 2\nthe end of its output:\n"
        "missing: dist/app.whl"
    )
    assert check.description() == (
        "The build is done: `echo 'missing: dist/app.whl' >&2; exit 2` exits with code 0."
    )


async def test_command_runs_in_its_working_dir_inside_the_workspace(tmp_path: Path) -> None:
    """`working_dir` is inside the workspace; a folder outside it is refused with a reason."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "marker").write_text("x")
    assert await CommandCheck("test -f marker", working_dir="sub").check(snapshot(tmp_path)) is None
    escaped = await CommandCheck("true", working_dir="../..").check(snapshot(tmp_path))
    assert escaped is not None
    assert "outside the workspace" in escaped


async def test_command_without_workspace_fails_closed() -> None:
    """With no workspace there is nowhere to run, so the check is not complete."""
    assert await CommandCheck("true").check(snapshot(None)) == (
        "`true` cannot run: the run has no workspace"
    )


async def test_command_timeout_is_a_reason_and_kills_the_command(tmp_path: Path) -> None:
    """A command past its timeout is stopped, and the reason says it did not finish."""
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    clock = FakeClock()
    check = CommandCheck(
        f"echo $$ > {fifo}; sleep 100", timeout=30, sandbox=LocalSandbox(clock=as_clock(clock))
    )
    reasons: list[str | None] = []

    async def run() -> None:
        reasons.append(await check.check(snapshot(tmp_path)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        pid = int(await anyio.to_thread.run_sync(fifo.read_text))
        clock.advance(30)
    assert reasons == [
        f"`echo $$ > {fifo}; sleep 100` did not finish within 30s and was stopped (no output)"
    ]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_command_sees_only_a_minimal_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command does not inherit this process's secrets, only what the check passes."""
    monkeypatch.setenv("API_KEY", "secret")
    check = CommandCheck('test -z "$API_KEY" && test "$MODE" = ci', env={"MODE": "ci"})
    assert await check.check(snapshot(tmp_path)) is None


async def test_suite_passing_is_complete(tmp_path: Path) -> None:
    """A real pytest run that passes completes the check."""
    workspace = _project(tmp_path / "ws", PASSING)
    assert await TestSuiteCheck(PYTEST).check(snapshot(workspace)) is None


async def test_suite_failure_names_the_failing_tests(tmp_path: Path) -> None:
    """A failing pytest run's reason names each failing test and pytest's counts."""
    workspace = _project(tmp_path / "ws", FAILING)
    reason = await TestSuiteCheck(PYTEST).check(snapshot(workspace))
    assert reason is not None
    headline, failing, *_ = reason.splitlines()
    assert headline.startswith(f"`{' '.join(PYTEST)}` exited with code 1 (2 failed, 1 passed in ")
    assert failing == "failing: test_sample.py::test_sub, test_sample.py::test_mul"
    assert "RuntimeError: boom" in reason


async def test_suite_with_no_tests_is_not_complete(tmp_path: Path) -> None:
    """pytest collecting nothing (exit 5) is "not complete", and the reason says why."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    reason = await TestSuiteCheck(PYTEST).check(snapshot(workspace))
    assert reason is not None
    assert reason.startswith(
        f"`{' '.join(PYTEST)}` ran no tests (exit code 5; its output says `no tests ran in "
    )


async def test_suite_reads_failures_from_a_fresh_junit_report(tmp_path: Path) -> None:
    """Failing tests are named from the JUnit XML the command writes."""
    workspace = _project(tmp_path / "ws", FAILING)
    check = TestSuiteCheck((*PYTEST, "--junitxml=out/report.xml"), junit_xml="out/report.xml")
    reason = await check.check(snapshot(workspace))
    assert reason is not None
    # Named once, as the report names them: not again under pytest's node ids.
    assert reason.splitlines()[1] == "failing: test_sample.test_sub, test_sample.test_mul"


async def test_suite_fails_on_junit_failures_even_with_exit_zero(tmp_path: Path) -> None:
    """A fresh report listing failures fails the check although the command exited 0."""
    report = """<testsuite><testcase classname="pkg.T" name="test_a"><failure message="x"/>
        </testcase><testcase classname="pkg.T" name="test_b"/></testsuite>"""
    check = TestSuiteCheck(f"cat > r.xml <<'EOF'\n{report}\nEOF", junit_xml="r.xml")
    reason = await check.check(snapshot(tmp_path))
    assert reason is not None
    assert reason.startswith("`cat > r.xml")
    assert "exited 0 but its JUnit report lists failures\nfailing: pkg.T.test_a" in reason


async def test_suite_ignores_a_stale_junit_report(tmp_path: Path) -> None:
    """A report left from before the run is not read: only the command's own output counts."""
    (tmp_path / "r.xml").write_text(
        '<testsuite><testcase name="old"><failure/></testcase></testsuite>'
    )
    assert await TestSuiteCheck("true", junit_xml="r.xml").check(snapshot(tmp_path)) is None


async def test_suite_notes_an_unreadable_junit_report(tmp_path: Path) -> None:
    """A report the command wrote but that is not XML is mentioned with line and column."""
    check = TestSuiteCheck("printf '<testsuite>' > r.xml; exit 1", junit_xml="r.xml")
    reason = await check.check(snapshot(tmp_path))
    assert reason is not None
    assert "r.xml is not valid XML (line 1, column 11)" in reason


async def test_suite_keeps_only_the_tail_of_long_output(tmp_path: Path) -> None:
    """A huge output is cut to its end, which is where runners print their summary."""
    check = TestSuiteCheck("seq 1 100000; echo THE-END; exit 1")
    reason = await check.check(snapshot(tmp_path))
    assert reason is not None
    assert reason.endswith("99999\n100000\nTHE-END")
    assert len(reason) < 1700


def test_description_says_what_done_means() -> None:
    """The description names the command and where it runs."""
    check = TestSuiteCheck("pytest -q", working_dir="backend")
    assert check.description() == (
        "The test suite passes: `pytest -q` (in backend) runs at least one test and exits "
        "with code 0. Fix the code, not the tests."
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"command": ""}, "'command' must not be empty"),
        ({"command": []}, "'command' must be a shell string or a non-empty list"),
        ({"command": "x", "timeout": 0}, r"'timeout' must be a positive number \(got 0\)"),
        ({"command": "x", "sandbox": "local"}, "'sandbox' must be a SandboxProvider"),
    ],
)
def test_bad_configuration_is_refused(kwargs: dict[str, object], message: str) -> None:
    """Empty commands, non-positive timeouts and non-sandboxes are configuration errors."""
    with pytest.raises(ConfigurationError, match=message):
        TestSuiteCheck(**kwargs)  # type: ignore[arg-type]


def test_failing_tests_from_several_runners() -> None:
    """Failing test names are read from pytest, unittest and go test output, without repeats;
    a go test whose subtest failed is named by that subtest."""
    output = textwrap.dedent(
        """\
        tests/test_a.py::test_x FAILED                                  [ 50%]
        FAILED tests/test_a.py::test_x - assert 1 == 2
        ERROR tests/test_b.py::test_y[param 1] - fixture 'db' not found
        FAIL: test_sub (test_m.T.test_sub)
        ERROR: test_old (test_m.T)
            --- FAIL: TestParse/empty (0.00s)
        --- FAIL: TestParse (0.00s)
        """
    )
    assert failing_tests(output) == [
        "tests/test_a.py::test_x",
        "tests/test_b.py::test_y[param 1]",
        "test_m.T.test_sub",
        "test_m.T.test_old",
        "TestParse/empty",
    ]


async def test_suite_never_judges_stale_bytecode(tmp_path: Path) -> None:
    """A fix of the same size and mtime as the cached bytecode is still what gets tested."""
    workspace = _project(
        tmp_path / "ws", "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    source = workspace / "calc.py"
    source.write_text("def add(a, b):\n    return a - b\n")
    py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)))
    stamp = source.stat()
    source.write_text("def add(a, b):\n    return a + b\n")
    os.utime(source, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert await TestSuiteCheck(PYTEST).check(snapshot(workspace)) is None
