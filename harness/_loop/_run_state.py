"""What every session of a run shares: its configuration, counters, clock, store and events.

`Run` (in `_run.py`) builds on this with what only a strategy needs: opening sessions and
producing the result. A `Session` sees only this, so the two modules import one way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import anyio
from attrs import define, evolve, field, frozen

from .._check_error import CheckError
from .._clock import Clock, clock_reader
from .._events._base import Event
from .._events._run import CheckFailed, CheckFlaky, CheckPassed, SinkFailed
from .._events._sinks import EventSink
from .._events._tool import ToolOutcome
from .._halt import CheckBroken
from .._messages import Message
from .._model import ModelClient
from .._pause import PauseSettings
from .._policy import Policy
from .._state import HistoryView, SessionStateSnapshot, SessionStore
from .._tools._base import Tool
from .._usage import NO_USAGE, Usage
from .._work_progress import WorkProgress

DEFAULT_MAX_CHECK_ERRORS = 3
"""Claims in a row at which the same check error halts a run (`CheckBroken`), for a policy
that does not say."""

if TYPE_CHECKING:
    # The features a plain run does not use load where they are configured or first needed
    # (a fresh process that runs one turn is a bench target: bench/run.py, W3).
    from .._checkpoints._base import Checkpoint, CheckpointDiff, Checkpointing, CheckpointStore
    from .._fs._path_guard import PathGuard
    from .._protected import ProtectedPaths, Tampering
    from .._verification import Baseline
    from ._compaction import Compaction

T = TypeVar("T")

DEFAULT_SYSTEM_PROMPT = (
    "You are an autonomous agent. Work on the task with the tools you have until it is "
    "really done; nobody is watching to answer questions."
)


@frozen(kw_only=True)
class RunConfig:
    """What a run is configured with: fixed when it starts and read by every session.

    The `Harness` makes one per run; sessions and strategies read it through `RunState`'s
    accessors (``run.model``, ``run.clock``, ...).
    """

    model: ModelClient
    tools: Mapping[str, Tool]
    policy: Policy
    clock: Clock
    workspace: Path | None = None
    system_prompt: str | None = None
    tool_timeout: float = 120.0
    done_tool: bool = False
    context_window: int | None = None
    pause: PauseSettings = PauseSettings()
    compaction: Compaction | None = None
    checkpoints: Checkpointing | None = None
    """The run's `Harness(checkpoints=...)` setting (None: off unless rollback opens them)."""


@define(eq=False, kw_only=True)
class RunState:
    """The run's configuration, counters and event sinks, shared by its sessions."""

    run_id: str
    task: str
    config: RunConfig
    sinks: list[EventSink]
    """The sinks still attached: one that raises is dropped (see `emit`). A plain field: a
    converter here would make attrs check every counter the loop updates."""
    started_at: float = 0.0
    deadline: float | None = None
    turns: int = 0
    tool_calls: int = 0
    usage: Usage = NO_USAGE
    check_reasons: list[str] = field(factory=list)
    check_errors: tuple[CheckError, int] | None = None
    """The completion check's last error and at how many claims in a row it came."""
    check_broken: CheckBroken | None = None
    """Set when the check could not judge the work at `max_check_errors` claims in a row."""
    store: SessionStore = field(factory=SessionStore)
    checkpoints: CheckpointStore | None = None
    """Where the workspace is checkpointed (see `start_checkpoints`); None: it is not."""
    last_checkpoint: Checkpoint | None = None
    """The checkpoint saved last in this run."""
    sink_failures: list[SinkFailed] = field(factory=list)
    protected: ProtectedPaths | None = None
    """The policy's protected paths, which the workspace tools refuse to write."""
    guard: PathGuard | None = None
    """The protected paths as the run found them (recorded before anything else)."""
    baselines: list[Baseline] = field(factory=list)
    tampering: list[Tampering] = field(factory=list)
    tampered_claims: int = 0
    paused: float = 0.0
    """Seconds spent paused for usage limits that do not count toward wall time: budgets
    measure the run's time from `started_at` plus this (events keep the clock's time)."""
    pauses: int = 0
    """Usage-limit pauses taken so far (`PauseSettings.max_pauses` bounds them)."""
    paused_total: float = 0.0
    """Seconds waited in those pauses, counted toward wall time or not
    (`PauseSettings.max_total_pause` bounds them)."""
    wall_scopes: list[anyio.CancelScope] = field(factory=list)
    """The run's wall-time cancel scopes in force, which such a pause postpones."""
    description: str = field(init=False, repr=False)
    """What "done" means (the policy's description), read once for the run."""
    now: Callable[[], float] = field(init=False, repr=False)
    """Read the run's clock (`Clock.now`, through `clock_reader`: the event loop is found once)."""

    def __attrs_post_init__(self) -> None:
        self.description = self.policy.description()
        self.now = clock_reader(self.config.clock)

    @property
    def model(self) -> ModelClient:
        return self.config.model

    @property
    def tools(self) -> Mapping[str, Tool]:
        return self.config.tools

    @property
    def policy(self) -> Policy:
        return self.config.policy

    @property
    def clock(self) -> Clock:
        return self.config.clock

    @property
    def workspace(self) -> Path | None:
        return self.config.workspace

    @property
    def tool_timeout(self) -> float:
        return self.config.tool_timeout

    @property
    def done_tool(self) -> bool:
        return self.config.done_tool

    def elapsed(self) -> float:
        return self.now() - self.started_at

    def emit(self, event: Event) -> None:
        """Hand `event` to every sink, in order. A sink that raises (a full disk, a closed
        pipe, a bug) is detached and reported once; the run goes on."""
        failed: list[tuple[EventSink, Exception]] | None = None
        for sink in self.sinks:
            try:
                sink.emit(event)
            except Exception as exc:
                if failed is None:
                    failed = []
                failed.append((sink, exc))
        if failed is not None:
            self._detach(event, failed)

    def _detach(self, event: Event, failed: list[tuple[EventSink, Exception]]) -> None:
        """Drop the sinks that failed on `event`; tell the others (a ``sink.failed`` WARNING,
        which the log records) and keep the failure for the result."""
        gone = {id(sink) for sink, _ in failed}
        self.sinks = [sink for sink in self.sinks if id(sink) not in gone]
        for sink, exc in failed:
            failure = SinkFailed(
                self.elapsed(), repr(sink), event.name, f"{type(exc).__name__}: {exc}"
            )
            self.sink_failures.append(failure)
            self.emit(failure)  # a sink failing on this is detached in turn

    def record_check(
        self,
        agent: str,
        turn: int,
        reason: str | None,
        error: CheckError | None = None,
        flaky: tuple[str, ...] = (),
    ) -> None:
        """Keep a completion check's verdict (a reason joins `check_reasons`) and emit it.

        `error` says the check could not judge the work (it raised, or its command could not
        start): the same error at the policy's `max_check_errors` claims in a row sets
        `check_broken`, which ends the run (the session and the strategies read it). `flaky`
        tests (failed and passed on the same code) are said first, apart (`check.flaky`)."""
        if flaky:
            self.emit(CheckFlaky(self.elapsed(), agent, turn, self.description, flaky))
        if reason is None:
            self.emit(CheckPassed(self.elapsed(), agent, turn, self.description))
        else:
            self.check_reasons.append(reason)
            traceback = None if error is None else error.traceback
            self.emit(CheckFailed(self.elapsed(), agent, turn, self.description, reason, traceback))
        self._count_check_error(error)

    def _count_check_error(self, error: CheckError | None) -> None:
        if error is None:
            self.check_errors = None
            return
        last = self.check_errors
        count = last[1] + 1 if last is not None and last[0].key == error.key else 1
        self.check_errors = (error, count)
        limit = getattr(self.policy, "max_check_errors", DEFAULT_MAX_CHECK_ERRORS)
        if limit is not None and count >= limit and self.check_broken is None:
            self.check_broken = CheckBroken(count, error.summary, error.cannot_run)

    async def start_checkpoints(self, settings: Checkpointing | None = None) -> bool:
        """Checkpoint the workspace from now on (a series named by the run's id), unless it
        already is; False when the run has no workspace or it cannot be checkpointed (a
        ``checkpoint.failed`` event says why)."""
        if self.checkpoints is not None:
            return True
        if self.workspace is None:
            return False
        from ._checkpointing import start  # only a run that checkpoints

        return await start(self, settings)

    async def checkpoint(
        self, label: str, progress: WorkProgress | None = None
    ) -> Checkpoint | None:
        """Checkpoint the workspace now and emit ``checkpoint.saved``; None when the run keeps
        no checkpoints or saving failed (then ``checkpoint.failed`` says why)."""
        if self.checkpoints is None:
            return None
        from ._checkpointing import save

        return await save(self, label, progress)

    async def restore(self, checkpoint: Checkpoint, reason: str) -> CheckpointDiff | None:
        """Put the workspace back to `checkpoint` and emit ``checkpoint.restored``; None when
        that failed (``checkpoint.failed`` says why)."""
        if self.checkpoints is None:
            return None
        from ._checkpointing import restore

        return await restore(self, checkpoint, reason)

    async def judge(
        self,
        snapshot: SessionStateSnapshot,
        judge: Callable[[SessionStateSnapshot], Awaitable[T]],
        *,
        record: bool = True,
    ) -> T:
        """Run `judge` (the completion check, or the policy's decision that runs it) on
        `snapshot`, with the verifier as the run found it.

        When protected paths changed since the run started, by any route, the change is
        recorded (``protected.changed``, `RunResult.tampering`) and `judge` gets a snapshot
        whose `tampering` names it and whose workspace is a temporary copy with the recorded
        files laid over the agent's work: the policy rejects the claim, and the checks'
        reason says what the untouched verifier thinks of the work. ``record=False`` judges
        the same way and records nothing (a best-of run measuring an attempt whose own run
        has already reported its claims).
        """
        guard, workspace = self.guard, snapshot.workspace
        if guard is None or workspace is None:
            return await judge(snapshot)
        changes = await anyio.to_thread.run_sync(guard.changes, workspace)
        if not changes:
            return await judge(snapshot)
        if record:
            from .._events._verifier import ProtectedPathsChanged

            self.tampering.extend(c for c in changes if c not in self.tampering)  # each once
            self.tampered_claims += 1
            at = self.elapsed()
            self.emit(ProtectedPathsChanged(at, snapshot.agent, snapshot.turns, changes))
            snapshot = evolve(snapshot, tampered_claims=self.tampered_claims)
        async with guard.pristine(workspace, changes) as copy:
            return await judge(evolve(snapshot, workspace=copy, tampering=changes))

    def system_message(self, base: str | None = None) -> Message:
        """The system prompt: the caller's, what "done" means, and how feedback is marked."""
        how = (
            "reply with your final answer and no tool calls, or call the `done` tool"
            if self.done_tool
            else "reply with your final answer and no tool calls"
        )
        text = (
            f"{base or self.config.system_prompt or DEFAULT_SYSTEM_PROMPT}\n\n"
            f"## When the task is done\n{self.description}\n\n"
            f"When you believe the task is done, {how}. An automated completion check then "
            "verifies the work; if something is missing you will be told what, and you must "
            "keep working.\n\n"
            "Messages wrapped in <harness-feedback> come from the harness's automated checks "
            "and monitors, never from the user."
        )
        return Message.system(text)

    def snapshot(
        self,
        *,
        agent: str = "builder",
        iteration: int = 0,
        messages: Sequence[Message] = (),
        tool_outcomes: Sequence[ToolOutcome] = (),
        turns: int = 0,
        tool_calls: int = 0,
        usage: Usage | None = None,
        session_started_at: float | None = None,
        claims_done: bool = False,
        final_text: str | None = None,
        now: float | None = None,
    ) -> SessionStateSnapshot:
        """The run as it is at `now` (a clock reading taken since the last await; by default
        the clock is read), seen from one session (by default none yet: the state a check
        sees before the first turn)."""
        config = self.config
        if now is None:
            now = self.now()
        return SessionStateSnapshot(
            run_id=self.run_id,
            task=self.task,
            agent=agent,
            iteration=iteration,
            workspace=config.workspace,
            messages=messages,
            tool_outcomes=tool_outcomes,
            check_reasons=HistoryView(self.check_reasons),
            turns=turns,
            tool_calls=tool_calls,
            usage=usage if usage is not None else NO_USAGE,
            run_turns=self.turns,
            run_tool_calls=self.tool_calls,
            run_usage=self.usage,
            started_at=self.started_at + self.paused,
            now=now,
            deadline=self.deadline,
            claims_done=claims_done,
            final_text=final_text,
            store=self.store.frozen(),
            context_window=config.context_window,
            session_started_at=now if session_started_at is None else session_started_at,
            tampered_claims=self.tampered_claims,
        )
