"""What every session of a run shares: its configuration, counters, clock, store and events.

`Run` (in `_run.py`) builds on this with what only a strategy needs: opening sessions and
producing the result. A `Session` sees only this, so the two modules import one way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from attrs import define, field, frozen

from ._clock import Clock
from ._compaction import Compaction
from ._events import CheckFailed, CheckPassed, Event, EventSink, SinkFailed
from ._messages import NO_USAGE, Message, Usage
from ._model import ModelClient
from ._policy import Policy
from ._state import HistoryView, SessionStateSnapshot, SessionStore, ToolOutcome
from ._tools import Tool

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
    compaction: Compaction | None = None


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
    store: SessionStore = field(factory=SessionStore)
    sink_failures: list[SinkFailed] = field(factory=list)
    description: str = field(init=False, repr=False)
    """What "done" means (the policy's description), read once for the run."""

    def __attrs_post_init__(self) -> None:
        self.description = self.policy.description()

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

    def now(self) -> float:
        return self.clock.now()

    def elapsed(self) -> float:
        return self.clock.now() - self.started_at

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

    def record_check(self, agent: str, turn: int, reason: str | None) -> None:
        """Keep a completion check's verdict (a reason joins `check_reasons`) and emit it."""
        if reason is None:
            self.emit(CheckPassed(self.elapsed(), agent, turn, self.description))
        else:
            self.check_reasons.append(reason)
            self.emit(CheckFailed(self.elapsed(), agent, turn, self.description, reason))

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
        if now is None:
            now = self.clock.now()
        return SessionStateSnapshot(
            run_id=self.run_id,
            task=self.task,
            agent=agent,
            iteration=iteration,
            workspace=self.workspace,
            messages=messages,
            tool_outcomes=tool_outcomes,
            check_reasons=HistoryView(self.check_reasons),
            turns=turns,
            tool_calls=tool_calls,
            usage=usage if usage is not None else NO_USAGE,
            run_turns=self.turns,
            run_tool_calls=self.tool_calls,
            run_usage=self.usage,
            started_at=self.started_at,
            now=now,
            deadline=self.deadline,
            claims_done=claims_done,
            final_text=final_text,
            store=self.store.frozen(),
            context_window=self.config.context_window,
            session_started_at=now if session_started_at is None else session_started_at,
        )
