"""`Harness`: the facade that wires a model, tools, a policy and a strategy into a run."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from attrs import Factory, define, evolve, field

from .._clock import Clock, SystemClock
from .._errors import ConfigurationError, FixtureError
from .._escalation import Escalates
from .._events._base import Event
from .._events._run import RunHalted, RunStarted, RunWarning
from .._events._sinks import EventSink, JsonlTranscript, StructlogSink
from .._events._stream import EventStream, stream_events
from .._fs._jsonl import check_output_file
from .._halt import BudgetExceeded, Cancelled, Completed, HaltReason, ModelFailed, ToolServerFailed
from .._model import ChecksConsumed, KnowsPrices, ModelClient, ReadsClock
from .._pause import PauseSettings
from .._policy import Policy, ProtectsPaths, ScopesRun
from .._protocols import implements
from .._result import RunResult
from .._state import SessionStateSnapshot
from .._tools._base import Tool, as_tools
from .._validate import check_positive, check_type, got
from ._cancel import CancelToken
from ._run import CheckpointsTheStart, Run, SingleSession, Strategy
from ._run_state import RunConfig

if TYPE_CHECKING:
    from .._checkpoints._base import Checkpointing
    from .._mcp._server import MCPServer
    from ._compaction import Compaction


# The features below load only when a harness is configured with them: a fresh process that
# runs one turn is a bench target (bench/run.py, W3).
def _checkpointing(value: object) -> Checkpointing | None:
    if value is None or value is False:
        return None
    from .._checkpoints._base import Checkpointing

    return Checkpointing.convert(value)


def _default_clock(model: object) -> Clock:
    """A replay fast-forwards; anything else runs on the system clock."""
    from .._fixtures._scripted import ScriptedModelClient

    if isinstance(model, ScriptedModelClient):
        from .._fixtures._fast_forward import FastForwardClock

        return FastForwardClock()
    return SystemClock()


def _compaction(value: object) -> Compaction | None:
    if value is None:
        return None
    from ._compaction import as_compaction

    return as_compaction(value)  # type: ignore[arg-type]  # it names a bad value


@define(kw_only=True, eq=False)
class Harness:
    """Runs an agent on a task until the policy halts it; `run` returns a `RunResult`.

    `pause` says how a usage limit is waited out (see `PauseSettings`).
    `transcript` names a JSONL file that receives every event as it happens. `sinks` receive
    events too (the library's logger always does: see `StructlogSink`); a sink that raises is
    detached and reported in `RunResult.sink_failures`, and the run goes on. `done_tool` offers
    the model a `done` tool as an explicit way to claim the task is done. `checkpoints` (True,
    or a `Checkpointing`) checkpoints the workspace when the run starts and at every rejected
    claim (and a Ralph strategy at the end of every iteration): see `harness.checkpoints`.
    `compaction` (``"drop_tool_outputs"``, ``"summarize"`` or a `Compaction`) keeps a long
    session inside `context_window` (see `Compaction`). `mcp_servers` (`MCPServer`s) are
    started once per run, before the first model call, and their tools offered to every
    session of the run (see ``docs/mcp.md``).

    `clock` is the system clock, except for a model that replays a script (a
    `ScriptedModelClient`: a fixture file): that run fast-forwards by default
    (`harness.testing.FastForwardClock`: recorded delays take no time, real work keeps real
    deadlines), as `harness run` and the pytest plugin replay. Give ``clock=SystemClock()``
    to replay at the recorded pace.

    Args:
        model: The agent's model: a provider's client, a coding agent, a `ModelLadder` or a
            `ScriptedModelClient`.
        policy: When the run stops: a `termination.TerminationPolicy` (budget, sensors,
            feedback and the completion check).
        tools: The agent's tools: `Tool`s, or plain functions made tools by their signature.
        strategy: How sessions are driven: one session by default; `strategies.Ralph`,
            `strategies.SelfVerifying`, `strategies.BestOf`.
        workspace: The folder the agent's tools and the checks work in.
        system_prompt: Replaces the start of the system prompt; what the check means by done
            is still added.
        clock: The run's clock (see above).
        sinks: Event sinks that receive every event as it happens.
        transcript: A JSONL file that receives every event.
        tool_timeout: Seconds one tool call may take.
        done_tool: Offer a `done` tool as an explicit claim of done.
        context_window: The model's context window in tokens (for `compaction` and the
            context-pressure sensor).
        pause: How a usage limit is waited out (`PauseSettings`).
        compaction: Keep a long session inside `context_window` (see `Compaction`).
        logger: A structlog logger for the run's events; the library's by default.
        checkpoints: True, or a `Checkpointing`: checkpoint the workspace as the run goes.
        mcp_servers: `MCPServer`s whose tools every session gets.
    """

    model: ModelClient
    policy: Policy
    tools: Sequence[Tool | Callable[..., Any]] = ()
    strategy: Strategy = field(factory=SingleSession)
    workspace: Path | str | None = None
    system_prompt: str | None = None
    clock: Clock = field(default=Factory(lambda self: _default_clock(self.model), takes_self=True))
    sinks: Sequence[EventSink] = ()
    transcript: Path | str | None = None
    tool_timeout: float = 120.0
    done_tool: bool = False
    context_window: int | None = None
    pause: PauseSettings = field(factory=PauseSettings)
    compaction: Compaction | None = field(default=None, converter=_compaction)
    logger: Any = None
    checkpoints: Checkpointing | None = field(default=None, converter=_checkpointing)
    mcp_servers: Sequence[MCPServer] = ()
    _tools: dict[str, Tool] = field(init=False)
    _workspace: Path | None = field(init=False)
    _scoped: bool = field(init=False)
    _protects: bool = field(init=False)
    _checkpoints_start: bool = field(init=False)
    _script: tuple[ChecksConsumed, ...] = field(init=False)
    _ladder: Escalates | None = field(init=False)

    def __attrs_post_init__(self) -> None:
        if not callable(getattr(self.model, "complete", None)):
            raise ConfigurationError(f"'model' must be a ModelClient (got {self.model!r})")
        if not implements(self.policy, Policy):
            raise ConfigurationError(f"'policy' must be a Policy (got {self.policy!r})")
        if not implements(self.strategy, Strategy):
            raise ConfigurationError(f"'strategy' must be a Strategy (got {self.strategy!r})")
        check_positive("tool_timeout", self.tool_timeout)
        check_type("workspace", self.workspace, (str, os.PathLike), "a path", allow_none=True)
        check_type("transcript", self.transcript, (str, os.PathLike), "a path", allow_none=True)
        check_type("system_prompt", self.system_prompt, str, "a string", allow_none=True)
        check_type("done_tool", self.done_tool, bool, "True or False")
        if not implements(self.clock, Clock):
            raise ConfigurationError(
                f"'clock' must be a Clock (SystemClock(), FakeClock(), ...) (got {got(self.clock)})"
            )
        check_type("sinks", self.sinks, (list, tuple), "a list of event sinks")
        for index, sink in enumerate(self.sinks):
            if not callable(getattr(sink, "emit", None)):
                raise ConfigurationError(
                    f"sinks[{index}] must be an event sink, with emit(event) (got {got(sink)})"
                )
        check_positive("context_window", self.context_window, integer=True, allow_none=True)
        if not isinstance(self.pause, PauseSettings):
            raise ConfigurationError(f"'pause' must be a PauseSettings (got {self.pause!r})")
        if self.compaction is not None and self.context_window is None:
            raise ConfigurationError(
                "'compaction' needs the model's context window: set context_window too"
            )
        self._tools = as_tools(self.tools)
        if self.mcp_servers != ():
            # MCP's modules load with the first harness that has servers, not with the package.
            from .._mcp._server import check_servers
            from .._mcp._tools import check_sdk_or_replay

            self.mcp_servers = check_servers(self.mcp_servers)
            check_sdk_or_replay(self.mcp_servers, self.model)
        # The optional hooks, asked once here rather than at every run.
        self._scoped = implements(self.policy, ScopesRun)
        self._protects = implements(self.policy, ProtectsPaths)
        self._checkpoints_start = implements(self.strategy, CheckpointsTheStart)
        self._script = (self.model,) if implements(self.model, ChecksConsumed) else ()
        self._ladder = self.model if implements(self.model, Escalates) else None
        if implements(self.model, ReadsClock):
            self.model.bind_clock(self.clock)
        if self.done_tool and "done" in self._tools:
            raise ConfigurationError("a tool is named 'done' and done_tool=True adds another")
        prices_known = self.model.prices_known if implements(self.model, KnowsPrices) else True
        if self.policy.requires_known_cost and not prices_known:
            raise ConfigurationError(
                "the budget sets max_cost_usd but the model's prices are unknown; "
                "give the client a price or drop the cost budget"
            )
        if self.transcript is not None:
            check_output_file("transcript", self.transcript)
        self._workspace = None
        if self.workspace is not None:
            path = Path(self.workspace)
            self._workspace = path.resolve()
            if not path.is_dir():
                raise ConfigurationError(
                    f"'workspace' must be an existing folder (got {str(path)!r})"
                )

    async def run(
        self, task: str, *, sinks: Sequence[EventSink] = (), cancel: CancelToken | None = None
    ) -> RunResult:
        """Run `task` to a halt. Never raises for the run's own reasons to stop.

        `cancel` lets someone outside stop the run and still get its result, halted
        `Cancelled` (see `CancelToken`); cancelling the caller's own scope propagates instead.
        """
        preflight = getattr(self.policy, "preflight", None)
        if preflight is not None:  # a check that cannot run: refused before anything starts
            check = getattr(self.policy, "completion_check", None)
            if getattr(check, "preflight", None) is None:
                preflight(self._workspace)  # nothing of the check's own to look at: no wait
            else:
                # In a thread: it may ask an interpreter whether it finds a module (`python -m`).
                # Only then: a thread's wait is one a test's autojumping clock jumps over.
                await anyio.to_thread.run_sync(preflight, self._workspace)
        run_id = os.urandom(6).hex()  # 12 hex digits, as random as a uuid4's first 12
        transcript = JsonlTranscript(self.transcript) if self.transcript is not None else None
        all_sinks: list[EventSink] = [StructlogSink(run_id, self.logger), *self.sinks, *sinks]
        if transcript is not None:
            all_sinks.append(transcript)
        wall = self.policy.wall_time
        run = Run(run_id=run_id, task=task, config=self._config(), sinks=all_sinks)
        run.started_at = run.now()
        run.deadline = None if wall is None else run.started_at + wall
        try:
            run.emit(
                RunStarted(
                    0.0,
                    run_id,
                    task,
                    self.strategy.name,
                    str(run.workspace) if run.workspace else None,
                    run.description,
                )
            )
            try:
                reason = await self._execute(run, cancel)
            except FixtureError as exc:
                exc.result = self._finish(run, ModelFailed("fixture", str(exc)))
                raise
            result = self._finish(run, reason)
            # A cancelled run stopped where it was, and work found done before the first turn
            # needed none: the lines such a run did not reach are not a fault (a retried or
            # resumed attempt replays its agent's whole script, and finds the work done).
            # A server that could not start stopped the run before its first model call too.
            reached = not isinstance(reason, Cancelled | ToolServerFailed) and reason != Completed(
                early=True
            )
            scripts = self._scripts(run) if reached else ()
            for model in scripts:
                try:
                    model.verify_consumed()
                except FixtureError as exc:
                    exc.result = result
                    raise
            return result
        finally:
            if run.checkpoints is not None:
                await run.checkpoints.aclose()
            if transcript is not None:
                transcript.close()
            # Sessions point back at their run: letting go of them here frees a finished run's
            # messages and events at once, by reference counting, instead of leaving the whole
            # graph to the cycle collector, whose passes over thousands of concurrent sessions'
            # leftovers cost more CPU than the turns themselves.
            run.sessions.clear()

    def _scripts(self, run: Run) -> tuple[ChecksConsumed, ...]:
        """The run's models that check their script was used up (scripted fixtures)."""
        if not run.extra_models:
            return self._script
        extra = (m for m in run.extra_models if implements(m, ChecksConsumed))
        return (*self._script, *extra)

    def _config(self) -> RunConfig:
        """This harness's settings as one frozen value: what the run reads, fixed at its start."""
        return RunConfig(
            # A model ladder's climb belongs to one run: each run climbs its own copy.
            model=self.model if self._ladder is None else self._ladder.for_run(),
            tools=self._tools,
            policy=self.policy,
            clock=self.clock,
            workspace=self._workspace,
            system_prompt=self.system_prompt,
            tool_timeout=self.tool_timeout,
            done_tool=self.done_tool,
            context_window=self.context_window,
            pause=self.pause,
            compaction=self.compaction,
            checkpoints=self.checkpoints,
        )

    def _finish(self, run: Run, reason: HaltReason) -> RunResult:
        result = run.result(reason)
        run.emit(
            RunHalted(result.elapsed, reason, reason.verified, run.turns, run.tool_calls, run.usage)
        )
        if run.sink_failures:  # read after `run.halted`: a sink may fail on that line too
            result = evolve(result, sink_failures=tuple(run.sink_failures))
        return result

    async def _execute(self, run: Run, cancel: CancelToken | None) -> HaltReason:
        """The strategy under the run's deadline and `cancel`, either of which cancels
        whatever is in flight and becomes the halt."""
        if cancel is None:
            return await self._within_deadline(run)
        # Checked first as well: a run that never awaits (a fixture without delays) would
        # not meet a cancelled scope.
        if not cancel.cancelled:
            with cancel.scope():
                return await self._within_deadline(run)
        # Reached only when the token was cancelled.
        return Cancelled(cancel.by or "the caller")

    async def _within_deadline(self, run: Run) -> HaltReason:
        if run.deadline is None:
            return await self._begin_and_run(run)
        with run.clock.deadline_scope(run.deadline) as scope:
            run.wall_scopes.append(scope)
            try:
                return await self._begin_and_run(run)
            finally:
                run.wall_scopes.remove(scope)
        # Reached only when the deadline cancelled the scope; time paused uncounted is not used.
        limit = run.deadline - run.started_at - run.paused
        return BudgetExceeded("max_wall_time", run.elapsed() - run.paused, limit)

    async def _begin_and_run(self, run: Run) -> HaltReason:
        if not self.mcp_servers:
            # No await since the run read the clock as it started: that reading is still the
            # time, for the state before the first turn.
            return await self._begin_and_run_strategy(run, now=run.started_at)
        from .._mcp._tools import open_tool_servers

        # Started first: a server that cannot start ends the run before anything costly (a
        # baseline's test suite, a model call) has run; closed last, however the run ends.
        async with open_tool_servers(
            self.mcp_servers,
            model=run.model,
            workspace=run.workspace,
            taken=run.tools,
            emit=run.emit,
            elapsed=run.elapsed,
        ) as started:
            if isinstance(started, HaltReason):
                return started
            run.config = evolve(run.config, tools={**run.config.tools, **started.tools})
            return await self._begin_and_run_strategy(run)

    async def _begin_and_run_strategy(self, run: Run, now: float | None = None) -> HaltReason:
        before = run.snapshot(now=now)  # the run before its first turn, for the policy's start
        early = await self._begin(run, before)
        if early is not None:
            return early
        if not self._scoped:
            return await self.strategy.run(run)
        async with self.policy.run_scope(before):  # type: ignore[attr-defined]
            return await self.strategy.run(run)

    async def _begin(self, run: Run, before: SessionStateSnapshot) -> HaltReason | None:
        """Before the strategy: the policy's start, the optional check before the first turn
        (which ends the run, `Completed(early=True)`, when the work is already done), and the
        checkpoint of the start, measured when the strategy needs that."""
        strategy = self.strategy
        measure = self._checkpoints_start and strategy.measures_start  # type: ignore[attr-defined]
        checkpointing = self.checkpoints if self.checkpoints is not None else None
        if measure and checkpointing is None:
            from .._checkpoints._base import Checkpointing

            checkpointing = Checkpointing()
        keep = checkpointing is not None and await run.start_checkpoints(checkpointing)
        await self._record_verifier(run, before)
        progress = None
        early: HaltReason | None = None
        # The start's progress is what a rollback compares every iteration with: measured
        # whole, never by a quicker rejection that measures nothing.
        whole = bool(keep and measure)
        if self.policy.check_before_first_turn:
            policy = self.policy.start_session(clock=run.clock)
            assessed = await run.assess(evolve(run.snapshot(), measure_whole=whole), policy)
            run.initial_reason, progress = assessed.reason, assessed.progress
            if run.initial_reason is None:
                early = Completed(early=True)
        elif whole:
            policy = self.policy.start_session(clock=run.clock)
            progress = (await policy.assess(evolve(run.snapshot(), measure_whole=True))).progress
        if keep:
            await run.checkpoint("run started", progress)
        return early

    async def _record_verifier(self, run: Run, before: SessionStateSnapshot) -> None:
        """Before the first turn: the protected paths as they are, then the policy's start
        (the checks' baselines: a test suite run once), each into the transcript."""
        policy = self.policy
        protected = policy.protected if self._protects else None  # type: ignore[attr-defined]
        if protected and run.workspace is not None:
            from .._events._verifier import ProtectedPathsRecorded
            from .._fs._path_guard import PathGuard

            run.protected = protected
            run.guard = await anyio.to_thread.run_sync(PathGuard.record, run.workspace, protected)
            run.emit(ProtectedPathsRecorded(run.elapsed(), protected.rules, len(run.guard.files)))
        baselines = await policy.start_run(before)
        if not baselines:
            return
        from .._events._verifier import BaselineRecorded

        for baseline in baselines:
            if isinstance(baseline, str):  # what the policy could not record, said at the start
                run.emit(RunWarning(run.elapsed(), "policy", baseline))
                continue
            run.baselines.append(baseline)
            run.emit(BaselineRecorded(run.elapsed(), baseline))
            if (excused := baseline.excused_warning()) is not None:
                run.emit(RunWarning(run.elapsed(), "baseline", excused))

    def stream(self, task: str) -> AbstractAsyncContextManager[EventStream[Event, RunResult]]:
        """Run `task` in the background and iterate its events as they happen.

        Leaving the block before the run ends cancels the run. After the events are
        exhausted, `stream.result` holds the `RunResult`.
        """
        return stream_events(lambda sink: self.run(task, sinks=[sink]))
