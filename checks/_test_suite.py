"""`TestSuiteCheck`: the test suite passes, run through a sandbox; the reason names the failures."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import anyio
from attrs import field, frozen

from harness import ProcessResult, SessionStateSnapshot, WorkspaceEscape, resolve_in_workspace
from harness._validate import positive

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
from ._test_output import JunitError, failing_tests, junit_failures, summary_counts

_SHOW = 8
_PYTEST_NO_TESTS = 5


@frozen
class TestSuiteCheck(Combinable):
    """Complete when the test command exits 0 within `timeout`.

    Otherwise the reason names the failing tests where the output says which (pytest,
    unittest, go test) or where the command writes a JUnit XML report at `junit_xml`
    (a workspace path; a report left over from before the run is ignored), then the end of
    the output. Failures listed in a fresh report fail the check even when the command exits 0.
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
            f"The test suite passes: `{command_text(self.command)}`{where} exits with code 0. "
            "Fix the code, not the tests."
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
        from_report: list[str] = []
        report_note = None
        if report is not None and await _stamp(report) not in (before, None):
            try:
                _, from_report = junit_failures(report, label=str(self.junit_xml))
            except JunitError as exc:
                report_note = str(exc)
        if result.ok and not from_report:
            return None
        return self._reason(result, from_report, report_note)

    def _report_path(self, state: SessionStateSnapshot) -> Path | str | None:
        if self.junit_xml is None or state.workspace is None:
            return None
        try:
            return resolve_in_workspace(state.workspace, self.junit_xml)
        except WorkspaceEscape as exc:
            return f"the JUnit report path is not usable: {exc}"

    def _reason(self, result: ProcessResult, from_report: list[str], note: str | None) -> str:
        if result.exit_code == _PYTEST_NO_TESTS and "no tests ran" in result.output_tail:
            headline = f"`{command_text(self.command)}` collected no tests (exit code 5)"
        elif result.ok:
            headline = (
                f"`{command_text(self.command)}` exited 0 but its JUnit report lists failures"
            )
        else:
            headline = failure_headline(self.command, result, self.timeout)
        counts = summary_counts(result.output_tail)
        if counts:
            headline += f" ({counts})"
        failing = list(from_report)
        failing += [name for name in failing_tests(result.output_tail) if name not in failing]
        if failing:
            shown = ", ".join(failing[:_SHOW])
            more = f" and {len(failing) - _SHOW} more" if len(failing) > _SHOW else ""
            headline += f"\nfailing: {shown}{more}"
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
