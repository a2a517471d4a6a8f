"""`harness run SPEC.toml`: run a spec, show progress, exit 0 only when the work is verified.

With ``--json`` the outcome is one JSON object on stdout (`result_json`) and every line for a
person goes to stderr, so CI can read the halt, the verified flag and the usage.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, TextIO

import anyio
import structlog
from attrs import define, evolve, frozen

from harness import (
    BudgetExceeded,
    Cancelled,
    ConfigurationError,
    FixtureError,
    ModelClient,
    ModelLadder,
    RecordingModelClient,
    RunResult,
)
from harness.events import CheckFailed, Event, EventSink, SinkFailed
from harness.extend import SystemClock, check_output_file, dump_json, remove_tree
from harness.testing import FastForwardClock
from termination import TerminationPolicy

from .._spec import Spec, capped, default_cap, load_spec
from ._attempts import attempts_json, print_attempts
from ._progress._display import ProgressDisplay, TracebackPrinter
from ._progress._open import open_progress
from ._signals import SignalCancel
from ._telemetry import otel_sink_for, shutdown_provider, tracer_provider_from_env
from ._terminal import for_terminal, terminal_safe_values

EXIT_VERIFIED = 0
EXIT_UNVERIFIED = 1
EXIT_ERROR = 2

# The budget of a run whose spec sets none, and no --max-turns or --max-wall-time: nobody
# watches an unattended run, so it never runs without a bound (documented in docs/termination.md).


class _Stderr:
    """Whatever `sys.stderr` is at the moment of writing (tests swap it), or the live
    display's `write`, which prints above its panel."""

    def __init__(self, progress: ProgressDisplay | None = None) -> None:
        self._progress = progress

    def write(self, text: str) -> int:
        if self._progress is not None:
            self._progress.write(text)
            return len(text)
        return sys.stderr.write(text)

    def flush(self) -> None:
        if self._progress is None:
            sys.stderr.flush()


@contextmanager
def logging_to_stderr(verbose: bool, progress: ProgressDisplay | None = None) -> Iterator[None]:
    """Structured logs go to stderr for the command's duration: warnings by default, every
    event with --verbose. The caller's structlog configuration is restored afterwards (or none,
    so that the library is silent again in a process that had not configured structlog)."""
    configured = structlog.is_configured()
    saved = structlog.get_config()
    level = logging.DEBUG if verbose else logging.WARNING
    # The values an agent controls reach the terminal escaped, whatever renders them.
    *before, renderer = saved["processors"] or [structlog.dev.ConsoleRenderer()]
    if progress is not None and not verbose:  # a warning among the progress lines, as one
        before, renderer = [structlog.processors.add_log_level], ProgressLine()
    structlog.configure(
        processors=[*before, traceback_elsewhere, terminal_safe_values, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=_Stderr(progress)),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
    try:
        yield
    finally:
        if configured:
            structlog.configure(**saved)
        else:
            structlog.reset_defaults()


def traceback_elsewhere(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> Any:
    """A structlog processor: a raising check's traceback leaves its ``check.failed`` line,
    which would show it as one escaped string; `TracebackPrinter` prints it, on its lines."""
    if event.get("event") == CheckFailed.name and event.get("error") is not None:
        event["error"] = "(the traceback follows)"
    return event


class ProgressLine:
    """Renders a log line as the progress lines read: ``[  12.34s] what happened``, the
    seconds since the command started (a run's own clock starts with it); a model call's
    retry in words."""

    def __init__(self) -> None:
        self._started = time.monotonic()

    def __call__(self, _logger: Any, _method: str, event: MutableMapping[str, Any]) -> str:
        name = str(event.pop("event", ""))
        event.pop("timestamp", None)
        level = event.pop("level", None)
        if name == "model.retry":
            status = event.get("status_code")
            why = f"{event.get('kind')}" + (f", HTTP {status}" if status else "")
            text = (
                f"{event.get('what', 'model')} call failed ({why}): retry "
                f"{event.get('attempt')} in {float(event.get('wait') or 0):g}s"
            )
        else:
            fields = " ".join(f"{key}={value}" for key, value in event.items())
            text = f"{level or 'warning'}: {name}" + (f" {fields}" if fields else "")
        return f"[{time.monotonic() - self._started:7.2f}s] {text}"


def handle(args: argparse.Namespace) -> int:
    # Progress on stderr: a live panel on a terminal, plain lines otherwise.
    progress = None if args.quiet else open_progress(sys.stderr, verbose=args.verbose)
    with logging_to_stderr(args.verbose, progress):
        outcome = _handle(args, progress)
    if args.json:
        print(dump_json(outcome.to_json()))
    return outcome.exit_code


@define
class _Temporary:
    """The temporary workspace this command made (a copy of the spec's template), if any;
    it is removed when the command ends unless --keep-workspace."""

    keep: bool
    path: Path | None = None

    @property
    def removed(self) -> bool:
        return self.path is not None and not self.keep

    def remove(self) -> None:
        """Remove it; never raises (a deep tree, a read-only folder, files vanishing as the
        agent's last process exits): what stays is named on stderr."""
        if self.path is None or self.keep:
            return
        problems = remove_tree(self.path)
        if problems:
            shown = "; ".join(problems[:3]) + (
                f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
            )
            print(
                f"harness: could not remove all of the temporary workspace {str(self.path)!r}: "
                f"{for_terminal(shown)}",
                file=sys.stderr,
            )


def _handle(args: argparse.Namespace, progress: ProgressDisplay | None) -> Outcome:
    temporary = _Temporary(keep=args.keep_workspace)
    try:
        return _run_spec(args, progress, temporary)
    finally:
        temporary.remove()  # also after an error or a signal


def _run_spec(
    args: argparse.Namespace, progress: ProgressDisplay | None, temporary: _Temporary
) -> Outcome:
    out = sys.stderr if args.json else sys.stdout
    workspace: Path | None = None
    transcript: Path | None = None
    provider: Any = None
    capped_run = False
    try:
        if args.backend == "trio":
            require_trio()
        if args.replay is None:
            spec = load_spec(args.spec)  # for a run: it has a prompt and a [model]
        else:
            if args.record is not None:
                return _error("--record and --replay cannot be combined: record a real model")
            # The recording is the model: the spec needs a prompt, not a [model].
            spec = replaying(load_spec(args.spec, purpose="task"), args.replay)
        prompt = spec.prompt
        assert prompt is not None  # a spec loaded for a run or a task has one
        policy = with_overrides(spec.policy, max_turns=args.max_turns, wall=args.max_wall_time)
        capped_run = not policy.budget.bounded  # an unattended run is never unbounded
        policy = capped(policy)
        if args.workspace is not None and not args.workspace.is_dir():
            return _error(f"--workspace {str(args.workspace)!r} is not a folder")
        # Every path checked before anything is created (a workspace, an emptied recording).
        if args.record is not None:
            check_output_file("recording", args.record)
        transcript = args.transcript or spec.transcript
        if transcript is None and spec.records and not args.no_transcript:
            transcript = spec.default_transcript()  # every run leaves a record to view
        if transcript is not None:
            check_output_file("transcript", transcript)
        workspace = spec.prepare_workspace(args.workspace)
        if args.workspace is None and spec.workspace_template is not None:
            temporary.path = workspace
        model = spec.build_model()  # a wrong [model] is said first, whatever else is wrong
        spec.require_workspace(workspace)
        # Named as the spec names them (checks[0]); the run's own preflight says it again.
        spec.preflight(workspace.resolve() if workspace is not None else None)
        wrap = None
        if args.record is not None:
            record: Path = args.record
            if isinstance(model, ModelLadder):
                # Each rung records its own fixture (run.rung0.jsonl, run.rung1.jsonl...): a
                # spec whose [[model.ladder]] names them replays the climb.
                model = model.with_models(
                    [
                        RecordingModelClient(m, record.with_suffix(f".rung{i}{record.suffix}"))
                        for i, m in enumerate(model.models)
                    ]
                )
            else:
                model = RecordingModelClient(model, record)

            def wrap(client: ModelClient, role: str) -> ModelClient:
                # Each extra model gets its own fixture beside the builder's: run.jsonl ->
                # run.evaluator.jsonl, so a SelfVerifying run replays with both scripts.
                return RecordingModelClient(client, record.with_suffix(f".{role}{record.suffix}"))

        sinks: list[EventSink] = []
        if progress is not None:
            sinks.append(progress.track(budget=policy.budget))
        if args.verbose:
            sinks.append(TracebackPrinter(sys.stderr.write if progress is None else progress.write))
        if args.otel:
            provider = tracer_provider_from_env()
            sinks.append(otel_sink(spec, provider))
        harness = spec.harness(
            model=model,
            workspace=workspace,
            policy=policy,
            sinks=sinks,
            transcript=transcript,
            wrap_model=wrap,
            # A replay fast-forwards unless asked: recorded delays take no time, and
            # wall-time budgets read the recorded time, so the replay halts where the run did.
            clock=SystemClock() if args.realtime or not replays_only(spec) else FastForwardClock(),
            # The display shows every event: the log would print sensor warnings twice.
            logger=None if progress is None or args.verbose else events_dropped(),
        )
    except (ConfigurationError, FixtureError) as exc:
        return _error(str(exc), workspace, transcript, temporary.removed)

    watch = SignalCancel()

    async def go() -> RunResult:
        async with watch.installed() as token:
            return await harness.run(prompt, cancel=token)

    try:
        with progress if progress is not None else nullcontext():
            result = anyio.run(go, backend=args.backend)
    except FixtureError as exc:
        print(f"harness: {for_terminal(exc, lines=True)}", file=sys.stderr)
        if exc.result is not None:
            _report(exc.result, workspace, transcript, out, temporary.removed)
            if capped_run:
                _cap_note(exc.result, out)
        return Outcome(EXIT_ERROR, exc.result, workspace, transcript, str(exc), temporary.removed)
    except ConfigurationError as exc:
        return _error(str(exc), workspace, transcript, temporary.removed)
    finally:
        if provider is not None:
            shutdown_provider(provider)  # flushes the exporter before the outcome is printed
    _report(result, workspace, transcript, out, temporary.removed)
    if capped_run:
        _cap_note(result, out)
    code = EXIT_VERIFIED if result.verified else EXIT_UNVERIFIED
    if isinstance(result.halt_reason, Cancelled) and watch.exit_code is not None:
        code = watch.exit_code
    return Outcome(code, result, workspace, transcript, None, temporary.removed)


def replaying(spec: Spec, fixture: Path) -> Spec:
    """`spec` with its model, and its evaluator's if it has one, replaced by recordings:
    `fixture`, and the ``.evaluator.jsonl`` beside it (the names ``--record`` writes)."""
    if not fixture.is_file():
        raise ConfigurationError(f"--replay {str(fixture)!r} is not a file")
    strategy = dict(spec.strategy)
    if "evaluator" in strategy:
        evaluator = fixture.with_suffix(f".evaluator{fixture.suffix}")
        if not evaluator.is_file():
            raise ConfigurationError(
                f"--replay: the spec's strategy has an evaluator, whose recording "
                f"{str(evaluator)!r} (beside {str(fixture)!r}) does not exist"
            )
        strategy["evaluator"] = {"type": "fixture", "path": str(evaluator.resolve())}
    model = {"type": "fixture", "path": str(fixture.resolve())}
    return evolve(spec, model=model, strategy=strategy)


def replays_only(spec: Spec) -> bool:
    """True when every model the spec runs (the builder's, an evaluator's) is a fixture."""
    tables = [spec.model, spec.strategy.get("evaluator")]
    return all(t is None or _fixtures_only(t) for t in tables) and spec.model is not None


def _fixtures_only(table: Any) -> bool:
    """A fixture's table, or a ladder's whose every rung is one."""
    if table.get("type") == "ladder":
        rungs = table.get("ladder")
        return isinstance(rungs, list) and all(
            isinstance(r, dict) and r.get("type") == "fixture" for r in rungs
        )
    return bool(table.get("type") == "fixture")


def with_overrides(
    policy: TerminationPolicy, *, max_turns: int | None, wall: float | None
) -> TerminationPolicy:
    """`policy` with the command line's budget limits in place of the spec's."""
    changes: dict[str, Any] = {}
    if max_turns is not None:
        changes["max_turns"] = max_turns
    if wall is not None:
        changes["max_wall_time"] = wall
    if not changes:
        return policy
    return evolve(policy, budget=evolve(policy.budget, **changes))


def events_dropped() -> Any:
    """A logger for the run that drops the events the progress display shows (all but a
    sink's failure, which the outcome names only at the end) and passes every other warning
    on to stderr."""
    # Every kind is defined by now: `harness.events`, imported above, loads the modules of
    # the features' events too (pauses, checkpoints, compaction...), not only the run's.
    names = _event_names(Event) - {SinkFailed.name}

    def drop(logger: Any, method: str, event: MutableMapping[str, Any]) -> Any:
        if event.get("event") in names:
            raise structlog.DropEvent
        return event

    processors = [drop, *structlog.get_config()["processors"]]
    return structlog.wrap_logger(None, processors=processors).bind()


def _event_names(kind: type[Event]) -> frozenset[str]:
    names = {kind.name}
    for sub in kind.__subclasses__():
        names |= _event_names(sub)
    return frozenset(names)


def require_trio() -> None:
    """A `ConfigurationError` naming the extra to install when trio cannot be imported."""
    try:
        import trio  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError(
            f"--backend trio needs trio, which cannot be imported ({exc}); "
            "install it with: pip install 'completion-harness[trio]'"
        ) from None


def _error(
    message: str,
    workspace: Path | None = None,
    transcript: Path | None = None,
    workspace_removed: bool = False,
) -> Outcome:
    print(f"harness: {for_terminal(message, lines=True)}", file=sys.stderr)
    return Outcome(EXIT_ERROR, None, workspace, transcript, message, workspace_removed)


def _report(
    result: RunResult,
    workspace: Path | None,
    transcript: Path | None,
    out: TextIO,
    workspace_removed: bool = False,
) -> None:
    status = "VERIFIED COMPLETE" if result.verified else "NOT VERIFIED"
    cost = "unknown" if result.usage.cost_usd is None else f"${result.usage.cost_usd:.4f}"
    print(f"{status}: {for_terminal(result.halt_reason.describe(), lines=True)}", file=out)
    print(
        f"  turns={result.turns} tool_calls={result.tool_calls} iterations={result.iterations} "
        f"tokens={result.usage.total_tokens} cost={cost} elapsed={result.elapsed:.2f}s",
        file=out,
    )
    verified_cost = result.verified_cost
    if verified_cost is not None:
        print(f"  cost of the verified result: {verified_cost.describe()}", file=out)
    print_attempts(result, out)
    if workspace is not None:
        note = (
            " (a temporary copy, removed; --keep-workspace keeps it)" if workspace_removed else ""
        )
        print(f"  workspace: {workspace}{note}", file=out)
    if transcript is not None:
        print(f"  transcript: {transcript}", file=out)
    for failure in result.sink_failures:
        line = f"  {failure.sink} stopped at {failure.failed_on}: {failure.error}"
        print(for_terminal(line), file=out)


def _cap_note(result: RunResult, out: TextIO) -> None:
    """Where the limit came from, when the default cap halted the run."""
    if isinstance(result.halt_reason, BudgetExceeded):
        cap = default_cap()
        print(
            "  the spec sets no [budget], so the default cap for unattended runs applied "
            f"(max_turns={cap.max_turns}, max_wall_time={cap.max_wall_time:g}s); "
            "set [budget] or --max-turns to choose",
            file=out,
        )


def otel_sink(spec: Spec, provider: Any) -> EventSink:
    """An `OtelSink` on `provider`, told the spec's requested models and provider."""
    return otel_sink_for(spec, spec.model, provider)


@frozen
class Outcome:
    """How `harness run` ended: the exit code, the result if the run got that far, and the
    error that stopped it, if any."""

    exit_code: int
    result: RunResult | None
    workspace: Path | None
    transcript: Path | None
    error: str | None = None
    workspace_removed: bool = False

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object (its schema is in docs/cli.md)."""
        result = self.result
        halt = None
        usage = None
        if result is not None:
            halt = {**result.halt_reason.to_dict(), "description": result.halt_reason.describe()}
            usage = {**result.usage.to_dict(), "total_tokens": result.usage.total_tokens}
        return {
            "exit_code": self.exit_code,
            "verified": result is not None and result.verified,
            "halt": halt,
            "run_id": result.run_id if result else None,
            "turns": result.turns if result else None,
            "tool_calls": result.tool_calls if result else None,
            "iterations": result.iterations if result else None,
            "usage": usage,
            "elapsed": result.elapsed if result else None,
            "spent": result.spent.to_dict() if result else None,
            "verified_cost": (
                result.verified_cost.to_dict()
                if result is not None and result.verified_cost is not None
                else None
            ),
            "transcript": str(self.transcript.resolve()) if self.transcript else None,
            "workspace": str(self.workspace.resolve()) if self.workspace else None,
            "workspace_removed": self.workspace_removed,
            "attempts": attempts_json(result),
            "error": self.error,
        }
