"""`TestSuiteCheck`: the test suite passes, run through a sandbox; the reason names the failures."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from attrs import Factory, field, frozen

from harness import ConfigurationError, SessionStateSnapshot, WorkspaceEscape, resolve_in_workspace
from harness.checkpoints import WorkProgress
from harness.extend import Baseline, ProcessResult, get_logger, positive

from ._baseline import Comparison, PerRun, SuiteBaseline, compare, matches
from ._cannot_run import CheckCannotRun
from ._command import (
    command_text,
    convert_command,
    convert_env,
    failure_headline,
    preflight_of,
    run_in_workspace,
    validate_sandbox,
    with_output,
)
from ._compose import Combinable
from ._junit_xml import JunitError
from ._last_verdict import LastVerdict
from ._progress import Assessment
from ._sandbox import LocalSandbox, SandboxProvider
from ._suite_tally import tally
from ._test_history import TestHistory
from ._test_output import (
    SuiteOutput,
    collection_failed,
    errored_tests,
    junit_failures,
    read_output,
)
from ._test_results import TestResults, Unreadable, junit_results, names, read_results
from ._test_selection import Selection, select

if TYPE_CHECKING:
    from ._baseline_cache import BaselineCache

_SHOW = 8
_FLAKY = (
    "flaky, failing and passing on the same code (they neither block the claim nor count as fixed)"
)
_log = get_logger("checks.test_suite")


def _reruns(instance: object, attribute: object, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"'reruns' must be an integer >= 0 (got {value!r})")


def _must_pass(value: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    items = tuple(value)
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ConfigurationError(f"'must_pass' must hold test names (got {item!r})")
    return items


@frozen
class _Ran:
    """One run of the suite: the process, what its output says, and its listing of tests."""

    result: ProcessResult
    said: SuiteOutput
    listing: TestResults | Unreadable
    from_report: list[str]
    report_cases: int | None
    report_note: str | None

    @property
    def failing(self) -> tuple[str, ...]:
        """The failing tests by the names the runner gives (the listing's, else the output's)."""
        if isinstance(self.listing, TestResults) and self.listing.runner != "JUnit XML":
            return tuple(sorted(self.listing.failed))
        return self.said.failing


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

    With `baseline`, `prepare` runs the suite once before the agent's first turn and records
    every test's outcome; a claim is then complete when every test that passed then still
    passes, every `must_pass` test passes and no new failure appeared, whatever the exit code
    (failures that predate the run are listed apart and do not block). This needs a listing
    of every test: the JUnit report, or output that names passing tests too (pytest ``-v`` or
    ``-rA``, unittest ``-v``, go test ``-v`` or ``-json``, node --test, cargo test). When the
    listing cannot be read, the check fails closed: the exit code decides, as without a
    baseline, and the reason says why. `must_pass` alone (no baseline) adds its tests to the
    plain check, and needs the listing. Baselines are kept for the newest `max_runs` runs.

    With `fast_reject` (the default), a claim first runs only the tests that failed at the
    run's last verdict and the `must_pass` tests (never those that already failed at the
    baseline), by name, stopping at the first failure (the verification guide says how, per
    runner); when one still fails, the claim is rejected with that run's output and the rest
    of the suite is not run. Only when they pass does the whole suite run, and only the whole
    suite can accept a claim. Where the runner cannot select (an unknown command, a shell
    pipeline, a `junit_xml` report), the whole suite runs at once. The last verdict is kept
    per run (`last_verdict_for`); a process that runs one claim each (the stop hooks) hands it
    to the next with `restore_last_verdict`.

    With `baseline_cache` (the default), a baseline is kept in the user's cache folder under
    a key of the command, its settings, the sandbox and the workspace's content, so that
    every run on the same content takes it once. Before a cached
    baseline's failures excuse anything, those tests are run on their own; when one passes
    now (or they cannot be run by name) the baseline is taken again.

    With `reruns` (default 1; 0 turns it off), a rejected claim's failing tests, and the
    baseline's, run again alone on the same tree up to that many times; a test that fails and
    then passes is flaky: reported apart (`Assessment.flaky`, a line
    in the reason), it neither blocks a claim nor counts as fixed, a flaky `must_pass` test
    leaves the task unverified, and it stays flaky for the rest of the run.

    Args:
        command: The test command: a list of words, or a shell string.
        working_dir: The folder it runs in, relative to the workspace.
        timeout: Seconds the suite may take (None: no limit); then it is stopped and the
            claim is not complete.
        sandbox: Where the command runs: `LocalSandbox`, or `BubblewrapSandbox` to keep it
            inside the workspace.
        junit_xml: A JUnit XML report the command writes (a workspace path), read for the
            names of the tests.
        env: Extra environment variables for the command.
        baseline: Run the suite before the first turn; a claim then passes when nothing that
            passed breaks and no new test fails.
        must_pass: Tests that must pass, by name or by the end of it; with `baseline`, name
            the task's own tests here, else a test that fails before the run is excused.
        max_runs: Runs whose baselines and last verdicts are kept.
        fast_reject: At a claim, first run the tests that failed last and the `must_pass`
            tests; one still failing rejects the claim without the rest of the suite.
        baseline_cache: Keep baselines in the user's cache folder, keyed by the workspace's
            content.
        reruns: Times a failing test runs again, alone, to tell a flaky test (0: never).
    """

    __test__ = False  # not a pytest test class, despite the name

    command: str | tuple[str, ...] = field(converter=convert_command)
    working_dir: str = "."
    timeout: float | None = field(default=600.0, validator=positive(allow_none=True))
    sandbox: SandboxProvider = field(factory=LocalSandbox, validator=validate_sandbox)
    junit_xml: str | None = None
    env: Mapping[str, str] = field(factory=dict, converter=convert_env, hash=False)
    baseline: bool = False
    must_pass: tuple[str, ...] = field(default=(), converter=_must_pass)
    max_runs: int = field(default=64, validator=positive(integer=True))
    fast_reject: bool = True
    baseline_cache: bool = True
    reruns: int = field(default=1, validator=_reruns)
    _baselines: PerRun[SuiteBaseline] = field(
        init=False,
        eq=False,
        repr=False,
        default=Factory(lambda self: PerRun(self.max_runs), takes_self=True),
    )
    _last: PerRun[LastVerdict] = field(
        init=False,
        eq=False,
        repr=False,
        default=Factory(lambda self: PerRun(self.max_runs), takes_self=True),
    )
    _history: PerRun[TestHistory] = field(
        init=False,
        eq=False,
        repr=False,
        default=Factory(lambda self: PerRun(self.max_runs), takes_self=True),
    )

    def description(self) -> str:
        where = "" if self.working_dir in (".", "") else f" (in {self.working_dir})"
        text = (
            f"The test suite passes: `{command_text(self.command)}`{where} runs at least one "
            "test and exits with code 0. Fix the code, not the tests."
        )
        if self.baseline:
            text = (
                f"The test suite `{command_text(self.command)}`{where} shows no new failure: "
                "every test that passed before you started still passes, and no test fails "
                "that did not fail then (failures that predate the task do not count). Fix "
                "the code, not the tests."
            )
        if self.must_pass:
            text += f" These tests must pass: {', '.join(self.must_pass)}."
        return text

    async def prepare(self, state: SessionStateSnapshot) -> Baseline | None:
        """With `baseline`, run the suite before the agent's first turn and remember every
        test's outcome for this run; the `Baseline` returned goes into the transcript."""
        if not self.baseline:
            return None
        shown = f"`{command_text(self.command)}`"
        cache = self._cache()
        if cache is not None and state.workspace is not None:
            from ._baseline_cache import locked

            key = await cache.key(self._cache_inputs(), state.workspace)
            async with locked(cache.folder / f"{key}.lock"):
                recorded = cache.load(key)
                if recorded is not None and not await self._still_failing(state, recorded):
                    recorded = None  # stale: what it would excuse passes now
                if recorded is None:
                    recorded, keep = await self._take_baseline(state, shown)
                    if keep:
                        cache.store(key, recorded)
        else:
            recorded, _ = await self._take_baseline(state, shown)
        self._baselines.remember(state.run_id, recorded)
        results = recorded.results
        seen = results.outcomes if results is not None else {}
        self._history.remember(state.run_id, TestHistory().seen(seen, recorded.flaky))
        return Baseline(
            check=shown,
            runner=results.runner if results is not None else None,
            passed=len(results.passed) if results is not None else 0,
            failing=recorded.failing,
            exit_code=recorded.exit_code,
            unreadable=recorded.unreadable,
            flaky=recorded.flaky,
            # Without must_pass, a test the task is about fails now and so never blocks.
            excused=() if self.must_pass else recorded.failing,
        )

    def preflight(self, workspace: Path | None) -> None:
        """Before the first model call: the suite's program can be found (see
        `preflight_command`), else a `ConfigurationError`."""
        preflight_of(
            self.command, self.working_dir, self.env, self.sandbox, workspace, "TestSuiteCheck"
        )

    def _cache(self) -> BaselineCache | None:
        """The baseline cache, or None: off, or no home folder to keep it in (a warning)."""
        if not self.baseline_cache:
            return None
        from ._baseline_cache import BaselineCache  # only a cached baseline needs it

        try:
            return BaselineCache.default()
        except RuntimeError as exc:
            _log.warning("baseline_cache.unavailable", why=str(exc))
            return None

    def _cache_inputs(self) -> dict[str, object]:
        """What a baseline depends on besides the workspace's content."""
        return {
            "command": self.command if isinstance(self.command, str) else list(self.command),
            "working_dir": self.working_dir,
            "env": dict(sorted(self.env.items())),
            "timeout": self.timeout,
            "junit_xml": self.junit_xml,
            "sandbox": repr(self.sandbox),
        }

    async def _take_baseline(
        self, state: SessionStateSnapshot, shown: str
    ) -> tuple[SuiteBaseline, bool]:
        """The suite as it is now, and whether that is worth keeping (a run that could not
        start, timed out or was killed says nothing lasting)."""
        try:
            ran = await self._run(state)
        except CheckCannotRun as exc:  # said again at every claim, where the run counts it
            ran = str(exc)
        if isinstance(ran, str):
            recorded = SuiteBaseline(shown, None, None, f"the suite could not run: {ran}")
        elif ran.result.timed_out or ran.result.exit_code < 0:
            why = failure_headline(self.command, ran.result, self.timeout)
            recorded = SuiteBaseline(shown, ran.result.exit_code, None, why)
        elif isinstance(ran.listing, Unreadable):
            recorded = SuiteBaseline(shown, ran.result.exit_code, None, ran.listing.why)
        else:
            flaky = await self._rerun(state, sorted(ran.listing.failed))
            recorded = SuiteBaseline(shown, ran.result.exit_code, ran.listing, flaky=flaky)
        lasting = not isinstance(ran, str) and not (
            ran.result.timed_out or ran.result.exit_code < 0
        )
        return recorded, lasting

    async def _still_failing(self, state: SessionStateSnapshot, recorded: SuiteBaseline) -> bool:
        """Whether every test a cached baseline says failed still fails, run on its own: a
        cached failure excuses nothing before it is seen again (the key can miss what the
        suite reads: an ignored folder, an ``assume-unchanged`` file). A baseline with no
        failure needs no run; tests that cannot be run by name are not shown failing."""
        failing = tuple(n for n in recorded.failing if n not in recorded.flaky)
        if not failing:
            return True
        alone = await self._run_alone(state, failing)
        if alone is not None and alone.failed >= set(failing):
            return True
        passing = sorted(alone.passed) if alone is not None else []
        _log.info(
            "baseline_cache.stale",
            why="a cached failure passes now" if passing else "its failures could not be rerun",
            passing=passing[:_SHOW],
        )
        return False

    async def _run_alone(self, state: SessionStateSnapshot, wanted: Sequence[str]) -> _Alone | None:
        """`wanted` run on their own, every one even after one fails: those the run shows
        failing and those it shows passing; None when they cannot be selected by name (an
        unknown command, a `junit_xml` report, whose names are not the runner's) or the run
        did not finish."""
        if self.junit_xml is not None:
            return None
        chosen = select(self.command, wanted, stop_first=False)
        if chosen is None:
            return None
        ran = await self._run(state, chosen.command)
        if isinstance(ran, str) or ran.result.timed_out or ran.result.exit_code < 0:
            return None
        failing = set(ran.failing)
        failed = frozenset(n for n in chosen.names if n in failing)
        if isinstance(ran.listing, TestResults):
            outcomes = ran.listing.outcomes
            passed = frozenset(n for n in chosen.names if outcomes.get(n) == "passed") - failed
        elif ran.result.ok and ran.said.ran and not collection_failed(ran.result.output_tail):
            passed = frozenset(chosen.names) - failed  # exit 0: every selected test passed
        else:
            passed = frozenset()
        return _Alone(passed, failed)

    def baseline_for(self, run_id: str) -> SuiteBaseline | None:
        """The baseline `prepare` recorded for the run, if it is still kept."""
        return self._baselines.get(run_id)

    def restore_baseline(self, run_id: str, baseline: SuiteBaseline) -> None:
        """Use `baseline`, recorded earlier (by another process: the stop hooks), for the run.
        A `ValueError` when it is another command's: its failures would excuse this suite's."""
        shown = f"`{command_text(self.command)}`"
        if baseline.command != shown:
            raise ValueError(f"it is the baseline of {baseline.command}, not of {shown}")
        self._baselines.remember(run_id, baseline)

    def last_verdict_for(self, run_id: str) -> LastVerdict | None:
        """What the run's last whole run of the suite found, if it is still kept."""
        return self._last.get(run_id)

    def restore_last_verdict(self, run_id: str, verdict: LastVerdict) -> None:
        """Start the run's next claim from `verdict`, found earlier (by another process: the
        stop hooks). A `ValueError` when it is another command's: its names would select
        nothing of this suite's, or the wrong tests."""
        if verdict.command != command_text(self.command):
            raise ValueError(
                f"it is the last verdict of `{verdict.command}`, not of "
                f"`{command_text(self.command)}`"
            )
        self._last.remember(run_id, verdict)

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return (await self.measure(state)).reason

    async def measure(self, state: SessionStateSnapshot) -> Assessment:
        """The verdict, and the tests passing of those that ran (see `_progress`).

        A rejection by the fast half measures nothing (its progress is None): it ran a few
        tests, which say nothing of the rest."""
        first = await self._fast_half(state)
        if isinstance(first, Assessment):
            return first
        ran = await self._run(state)
        if isinstance(ran, str):
            return Assessment(ran)
        stopped = ran.result.timed_out or ran.result.exit_code < 0
        listed = ran.listing.outcomes if isinstance(ran.listing, TestResults) else {}
        if not stopped:
            shown = command_text(self.command)
            self._last.remember(state.run_id, LastVerdict(shown, ran.failing, tuple(listed)))
        history = self._history_of(state.run_id)
        verdict = self._verdict(state, ran, history.flaky)
        again = self._worth_rerunning(state, ran, history.flaky) if verdict and not stopped else []
        found = await self._rerun(state, again)
        if not stopped:
            seen = dict(listed) or dict.fromkeys(ran.failing, "failed")
            history = history.seen(seen, found).seen(dict.fromkeys(found, "passed"))
            self._history.remember(state.run_id, history)
        if found:
            verdict = self._verdict(state, ran, history.flaky)
        if verdict is not None and first is not None:
            headline, newline, rest = verdict.partition("\n")
            verdict = f"{headline}\n(first ran only: {first.said}){newline}{rest}"
        present = set(listed) | set(ran.failing)
        flaky = tuple(sorted(n for n in history.flaky if n in present))
        return Assessment(verdict, _progress(ran, history.flaky), flaky=flaky)

    def _history_of(self, run_id: str) -> TestHistory:
        """The run's test history; for a run this check did not prepare (a stop hook's, whose
        baseline was restored), one that starts from its baseline's flaky tests."""
        history = self._history.get(run_id)
        if history is not None:
            return history
        recorded = self._baselines.get(run_id)
        return TestHistory(flaky=frozenset(recorded.flaky if recorded is not None else ()))

    def _worth_rerunning(
        self, state: SessionStateSnapshot, ran: _Ran, flaky: frozenset[str]
    ) -> list[str]:
        """The failures of a rejected claim that a rerun could show flaky: those not known
        flaky already, and not failing since the baseline (unless `must_pass` names them)."""
        if not self.reruns:
            return []
        recorded = self._baselines.get(state.run_id) if self.baseline else None
        base = recorded.results if recorded is not None else None
        predating = base.failed if base is not None else frozenset()
        return [
            n
            for n in ran.failing
            if n not in flaky and (n not in predating or any(matches(e, n) for e in self.must_pass))
        ]

    async def _rerun(self, state: SessionStateSnapshot, failing: Sequence[str]) -> tuple[str, ...]:
        """Of `failing` (failed on this tree just now), those that pass when run again, alone,
        on the same tree, up to `reruns` times: flaky (none when they cannot be run by name)."""
        left = list(failing)
        found: list[str] = []
        for _ in range(self.reruns if left else 0):
            alone = await self._run_alone(state, left)
            if alone is None:
                break
            found += [n for n in left if n in alone.passed]
            left = [n for n in left if n not in alone.passed]
            if not left:
                break
        if found:
            _log.info("test_suite.flaky", tests=found[:_SHOW], count=len(found))
        return tuple(found)

    def _candidates(self, state: SessionStateSnapshot) -> tuple[str, ...]:
        """The tests the fast half runs: those that failed at the last verdict, but not at the
        baseline, and the `must_pass` tests as the last listing (else the baseline's) names
        them."""
        last = self._last.get(state.run_id)
        recorded = self._baselines.get(state.run_id) if self.baseline else None
        base = recorded.results if recorded is not None else None
        predating = base.failed if base is not None else frozenset()
        listed: tuple[str, ...] = ()
        if last is not None and last.names:
            listed = last.names
        elif base is not None:
            listed = tuple(base.outcomes)
        required = [n for n in listed if any(matches(e, n) for e in self.must_pass)]
        flaky = self._history_of(state.run_id).flaky
        failing = [
            n
            for n in (last.failing if last is not None else ())
            if n not in predating and n not in flaky
        ]
        return tuple(dict.fromkeys([*failing, *required]))

    async def _fast_half(self, state: SessionStateSnapshot) -> Assessment | _FirstRan | None:
        """A rejection by the tests most likely to fail still; else what the selection that
        ran found (none of its tests failing), or None when there was none to run."""
        if not self.fast_reject or self.junit_xml is not None or state.measure_whole:
            return None
        chosen = select(self.command, self._candidates(state))
        if chosen is None:
            return None
        ran = await self._run(state, chosen.command)
        if isinstance(ran, str) or ran.result.timed_out or ran.result.exit_code < 0:
            return None  # the whole suite runs, and says what is wrong
        failing = set(ran.failing)
        still = [n for n in chosen.names if n in failing]
        if not still:
            return _FirstRan(chosen, fates(chosen.names, ran))
        known = self._history_of(state.run_id).flaky
        flaky = tuple(n for n in still if n in known)
        reason = self._fast_reason(chosen, ran, still, frozenset(flaky))
        return Assessment(with_output(reason, ran.result), flaky=flaky)

    def _fast_reason(
        self, chosen: Selection, ran: _Ran, still: list[str], flaky: frozenset[str]
    ) -> str:
        """The fast half's rejection, in the words of the whole suite's: the `must_pass`
        tests not passing, the other tests still failing, then what ran."""
        counts = f" ({ran.said.counts})" if ran.said.counts else ""
        shown = f"`{command_text(self.command)}`"
        lines = [f"{shown} still fails {len(still)} of the tests run first{counts}"]
        errored = errored_tests(ran.result.output_tail)
        unmet = [
            f"{entry} ({', '.join(f'{n} {_failed(n, errored)}{_shaky(n, flaky)}' for n in named)})"
            for entry in self.must_pass
            if (named := [n for n in still if matches(entry, n)])
        ]
        if unmet:
            lines.append(f"must_pass tests not passing: {'; '.join(unmet[:_SHOW])}")
        other = [n for n in still if not any(matches(e, n) for e in self.must_pass)]
        if other:
            lines.append(f"tests that failed at the last verdict still fail: {names(other, _SHOW)}")
        lines.append(
            f"(only these were selected, with `{_quoted(chosen.command)}`: "
            f"{fates(chosen.names, ran)}; the whole suite runs once they pass)"
        )
        return "\n".join(lines)

    def _verdict(
        self, state: SessionStateSnapshot, ran: _Ran, flaky: frozenset[str] = frozenset()
    ) -> str | None:
        result, said = ran.result, ran.said
        none_ran = None
        if result.timed_out or result.exit_code < 0:
            pass  # stopped before it could finish: what it ran so far says nothing
        elif ran.report_cases == 0:
            none_ran = f"its JUnit report {self.junit_xml} lists no test cases"
        elif ran.report_cases is None and said.ran is False:
            none_ran = f"its output says `{said.none_ran}`"
        if self.baseline or self.must_pass:
            judged = self._against_baseline(state, ran, none_ran, flaky)
            if not isinstance(judged, _Fallback):
                return judged
            fallback = judged.why
        else:
            fallback = None
        if result.ok and not ran.from_report and none_ran is None:
            return None
        if none_ran is None and _only_flaky(ran, flaky):
            return None  # every failure passed when run again: nothing blocks
        reason = self._reason(result, said, ran.from_report, none_ran, ran.report_note, flaky)
        if not fallback:
            return reason
        headline, newline, rest = reason.partition("\n")
        return f"{headline}\n({fallback}; so the exit code decides){newline}{rest}"

    def _against_baseline(
        self,
        state: SessionStateSnapshot,
        ran: _Ran,
        none_ran: str | None,
        flaky: frozenset[str] = frozenset(),
    ) -> str | _Fallback | None:
        """The verdict by test names, or a `_Fallback` saying why names cannot decide."""
        result, listing = ran.result, ran.listing
        shown = f"`{command_text(self.command)}`"
        if result.timed_out or result.exit_code < 0:
            return _Fallback("the run was stopped, so its listing is not whole")
        if isinstance(listing, Unreadable):
            if self.must_pass:
                return with_output(
                    f"{shown} must show that {', '.join(self.must_pass)} passed, but its "
                    f"output cannot be read into test names: {listing.why}",
                    result,
                )
            return _Fallback(f"the baseline is not applied: {listing.why}")
        recorded = self._baselines.get(state.run_id) if self.baseline else None
        if self.baseline and recorded is None:
            why = "no baseline was recorded for this run (it is taken when a run starts)"
        elif recorded is not None and recorded.results is None:
            why = f"the baseline could not be read into test names ({recorded.unreadable})"
        else:
            why = None
        base = recorded.results if recorded is not None else None
        comparison = compare(base, listing, self.must_pass, flaky)
        if why is not None or not self.baseline:
            if comparison.unmet:
                return self._compared(shown, ran, compare(None, listing, self.must_pass, flaky))
            return _Fallback(f"the baseline is not applied: {why}") if why else _Fallback("")
        if none_ran is not None or not listing.outcomes:
            said = none_ran or "its listing names no test"
            return with_output(f"{shown} ran no tests ({said})", result)
        if not result.ok and not listing.failed:
            return with_output(
                f"{failure_headline(self.command, result, self.timeout)} although no test "
                "failed; something else went wrong",
                result,
            )
        if comparison.complete:
            return None
        return self._compared(shown, ran, comparison)

    def _compared(self, shown: str, ran: _Ran, comparison: Comparison) -> str:
        result = ran.result
        headline = (
            f"{shown} exited 0"
            if result.ok
            else failure_headline(self.command, result, self.timeout)
        )
        if ran.said.counts:
            headline += f" ({ran.said.counts})"
        lines = [headline]
        if comparison.broken:
            broken = names(comparison.broken, _SHOW)
            lines.append(f"tests that passed before the run no longer pass: {broken}")
        if comparison.new_failures:
            lines.append(f"new failures: {names(comparison.new_failures, _SHOW)}")
        if comparison.unmet:
            lines.append(f"must_pass tests not passing: {'; '.join(comparison.unmet[:_SHOW])}")
        if comparison.predating:
            lines.append(
                "failing since before the run began (these do not block): "
                f"{names(comparison.predating, _SHOW)}"
            )
        if comparison.flaky:
            lines.append(f"{_FLAKY}: {names(comparison.flaky, _SHOW)}")
        return with_output("\n".join(lines), result)

    async def _run(
        self, state: SessionStateSnapshot, command: str | tuple[str, ...] | None = None
    ) -> _Ran | str:
        report = self._report_path(state) if command is None else None
        if isinstance(report, str):
            return report
        before = await _stamp(report)
        result = await run_in_workspace(
            state,
            self.command if command is None else command,
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
        listing: TestResults | Unreadable | None = None
        if report is not None and await _stamp(report) not in (before, None):
            try:
                report_cases, from_report = junit_failures(report, label=str(self.junit_xml))
                listing = junit_results(report, label=str(self.junit_xml))
            except JunitError as exc:
                report_note = str(exc)
                listing = Unreadable(report_note)
        if listing is None:
            listing = read_results(result.output_tail, truncated=result.truncated)
        said = read_output(result.output_tail, complete=not result.truncated)
        return _Ran(result, said, listing, from_report, report_cases, report_note)

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
        flaky: frozenset[str] = frozenset(),
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
        failing = [n for n in from_report or said.failing if n not in flaky]
        shaky = [n for n in from_report or said.failing if n in flaky]
        if failing:
            names = ", ".join(failing[:_SHOW])
            more = f" and {len(failing) - _SHOW} more" if len(failing) > _SHOW else ""
            headline += f"\nfailing: {names}{more}"
        if shaky:
            headline += f"\n{_FLAKY}: {', '.join(shaky[:_SHOW])}"
        if note:
            headline += f"\n{note}"
        return with_output(headline, result)


def _only_flaky(ran: _Ran, flaky: frozenset[str]) -> bool:
    """Whether the run failed only by tests known to be flaky: it names its failures, each is
    flaky, it ran tests, and nothing else went wrong (a timeout, a module not collected)."""
    result, failing = ran.result, ran.from_report or list(ran.failing)
    return (
        bool(failing)
        and all(n in flaky for n in failing)
        and not (result.timed_out or result.exit_code < 0)
        and ran.said.ran is not False
        and not collection_failed(result.output_tail)
    )


def _progress(ran: _Ran, flaky: frozenset[str] = frozenset()) -> WorkProgress | None:
    """Tests passing of those that ran: from a fresh JUnit report, else the listing of named
    outcomes when it names passing tests, else the runner's closing counts (with the failing
    names the output gives). A run that timed out or was killed counts none as passing."""
    result, listing = ran.result, ran.listing
    counted = tally(result.output_tail)
    if ran.report_cases is not None:
        passed, total, failing = (
            ran.report_cases - len(ran.from_report),
            ran.report_cases,
            list(ran.from_report),
        )
    elif isinstance(listing, TestResults) and listing.passed:
        failing = [name for name, outcome in listing.outcomes.items() if outcome == "failed"]
        passed, total = len(listing.passed), len(listing.passed) + len(failing)
        passed -= len(listing.passed & flaky)  # a flaky test's pass shows nothing
    elif counted is not None:
        passed, total, failing = counted.passed, counted.total, list(ran.said.failing)
    else:
        return None
    if result.timed_out or result.exit_code < 0:
        passed = 0
    return WorkProgress(max(0, min(passed, total)), total, "tests", failing)


@frozen
class _Alone:
    """Some tests run on their own: those the run showed passing, and failing."""

    passed: frozenset[str]
    failed: frozenset[str]


@frozen
class _FirstRan:
    """The fast half's selection, which ran with none of its tests failing, and what happened
    to each of them (`fates`)."""

    selection: Selection
    said: str


def fates(wanted: Sequence[str], ran: _Ran) -> str:
    """What happened to each of `wanted` in `ran`, and never more than its output shows:
    passed, failed, errored, skipped, not collected (the run could not collect tests), not
    run (a whole listing that does not name it), or, from output that names only failures,
    not named as failing."""
    output = ran.result.output_tail
    errored = errored_tests(output)
    failing = set(ran.failing)
    listing = ran.listing if isinstance(ran.listing, TestResults) else None
    uncollected = collection_failed(output)
    said = []
    for name in wanted[:_SHOW]:
        outcome = listing.outcomes.get(name) if listing is not None else None
        if name in failing or outcome == "failed":
            fate = _failed(name, errored)
        elif outcome is not None:
            fate = outcome
        elif uncollected:
            fate = "not collected"
        elif listing is not None:
            fate = "not run"
        else:
            fate = "not named as failing (the output names no passing test)"
        said.append(f"{name} {fate}")
    more = f" and {len(wanted) - _SHOW} more" if len(wanted) > _SHOW else ""
    text = ", ".join(said) + more
    if uncollected:
        text += "; some tests could not be collected (see the output below)"
    return text


def _shaky(name: str, flaky: frozenset[str]) -> str:
    return (
        " (and flaky: it failed and passed on the same code earlier in the run)"
        if (name in flaky)
        else ""
    )


def _failed(name: str, errored: frozenset[str]) -> str:
    return "errored" if name in errored else "failed"


def _quoted(command: str | tuple[str, ...]) -> str:
    """The command as a shell would take it (a selection's pattern has spaces)."""
    return command if isinstance(command, str) else shlex.join(command)


async def _stamp(path: Path | None) -> tuple[int, int] | None:
    """The file's (mtime in ns, size), or None when it does not exist."""
    if path is None:
        return None
    try:
        stat = await anyio.Path(path).stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


@frozen
class _Fallback:
    """Test names cannot decide: the exit code does, and `why` says so ("" for the plain
    check with its `must_pass` tests met)."""

    why: str
