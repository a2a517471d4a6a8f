"""`TestSuiteCheck`: the test suite passes, run through a sandbox; the reason names the failures."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import anyio
from attrs import field, frozen

from harness import SessionStateSnapshot, WorkspaceEscape, resolve_in_workspace
from harness.extend import ProcessResult, positive

from ._command import (
    command_text,
    convert_command,
    convert_env,
    failure_headline,
    run_in_workspace,
    validate_sandbox,
    with_output,
)
from ._compose import Combinable
from ._sandbox import LocalSandbox, SandboxProvider
from ._test_output import JunitError, SuiteOutput, junit_failures, read_output

_SHOW = 8


@frozen
class TestSuiteCheck(Combinable):
    """Complete when the test command exits 0 within `timeout` and ran at least one test.

    Otherwise the reason names the failing tests: from a JUnit XML report the command writes
    at `junit_xml` (a workspace path; a report left over from before the run is ignored), or
    else from the output (pytest, unittest, go test, node --test, cargo test); then the end of
    the output. Failures listed in a fresh report fail the check even when the command exits 0.
    A run that ran no tests is not complete whatever its exit code: a fresh report with no
    test cases, or output that says so (``Ran 0 tests``, ``no tests ran``, ``[no test
    files]``, ``# tests 0``, ``running 0 tests``, ...) with no line showing a test ran.
    """

    __test__ = False  # not a pytest test class, despite the name

    command: str | tuple[str, ...] = field(converter=convert_command)
    working_dir: str = "."
    timeout: float | None = field(default=600.0, validator=positive(allow_none=True))
    sandbox: SandboxProvider = field(factory=LocalSandbox, validator=validate_sandbox)
    junit_xml: str | None = None
    env: Mapping[str, str] = field(factory=dict, converter=convert_env, hash=False)

    def description(self) -> str:
        where = "" if self.working_dir in (".", "") else f" (in {self.working_dir})"
        return (
            f"The test suite passes: `{command_text(self.command)}`{where} runs at least one "
            "test and exits with code 0. Fix the code, not the tests."
        )

    async def check(self, state: SessionStateSnapshot) -> str | None:
        report = self._report_path(state)
        if isinstance(report, str):
            return report
        before = await _stamp(report)
        result = await run_in_workspace(
            state,
            self.command,
            working_dir=self.working_dir,
            timeout=self.timeout,
            sandbox=self.sandbox,
            env=self.env,
        )
        if isinstance(result, str):
            return result
        report_cases: int | None = None
        from_report: list[str] = []
        report_note = None
        if report is not None and await _stamp(report) not in (before, None):
            try:
                report_cases, from_report = junit_failures(report, label=str(self.junit_xml))
            except JunitError as exc:
                report_note = str(exc)
        said = read_output(result.output_tail, complete=not result.truncated)
        none_ran = None
        if result.timed_out or result.exit_code < 0:
            pass  # stopped before it could finish: what it ran so far says nothing
        elif report_cases == 0:
            none_ran = f"its JUnit report {self.junit_xml} lists no test cases"
        elif report_cases is None and said.ran is False:
            none_ran = f"its output says `{said.none_ran}`"
        if result.ok and not from_report and none_ran is None:
            return None
        return self._reason(result, said, from_report, none_ran, report_note)

    def _report_path(self, state: SessionStateSnapshot) -> Path | str | None:
        if self.junit_xml is None or state.workspace is None:
            return None
        try:
            return resolve_in_workspace(state.workspace, self.junit_xml)
        except WorkspaceEscape as exc:
            return f"the JUnit report path is not usable: {exc}"

    def _reason(
        self,
        result: ProcessResult,
        said: SuiteOutput,
        from_report: list[str],
        none_ran: str | None,
        note: str | None,
    ) -> str:
        shown = f"`{command_text(self.command)}`"
        if none_ran is not None:
            code = "" if result.ok else f"exit code {result.exit_code}; "
            headline = (
                f"{shown} ran no tests ({code}{none_ran}); a suite that runs nothing "
                "does not show the work is done"
            )
        elif result.ok:
            headline = f"{shown} exited 0 but its JUnit report lists failures"
        else:
            headline = failure_headline(self.command, result, self.timeout)
        if said.counts and none_ran is None:
            headline += f" ({said.counts})"
        # A fresh report names every failure; the output may name the same ones differently
        # (pytest's node ids beside the report's dotted names), so it is read only without one.
        failing = from_report or list(said.failing)
        if failing:
            names = ", ".join(failing[:_SHOW])
            more = f" and {len(failing) - _SHOW} more" if len(failing) > _SHOW else ""
            headline += f"\nfailing: {names}{more}"
        if note:
            headline += f"\n{note}"
        return with_output(headline, result)


async def _stamp(path: Path | None) -> tuple[int, int] | None:
    """The file's (mtime in ns, size), or None when it does not exist."""
    if path is None:
        return None
    try:
        stat = await anyio.Path(path).stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
