"""A run in progress: the handle a strategy drives, and the `Strategy` protocol."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from attrs import define, field

from ._clock import Clock, time_reader
from ._events import CheckFailed, CheckPassed, Event, EventSink, IterationStarted
from ._messages import NO_USAGE, Message, Usage
from ._model import ModelClient
from ._policy import Limit, Policy, PolicySession
from ._result import HaltReason, RunResult, SessionTranscript
from ._session import DONE_TOOL, OnClaim, Session, ToolTable
from ._state import HistoryView, SessionStateSnapshot, SessionStore
from ._tools import Tool

DEFAULT_SYSTEM_PROMPT = (
    "You are an autonomous agent. Work on the task with the tools you have until it is "
    "really done; nobody is watching to answer questions."
)


@runtime_checkable
class Strategy(Protocol):
    """How a run uses sessions: one loop, fresh Ralph iterations, build-then-evaluate, ..."""

    @property
    def name(self) -> str: ...

    async def run(self, run: Run) -> HaltReason:
        """Drive sessions until the run halts; return why."""
        ...


@define(eq=False)
class Run:
    """Everything one run shares across its sessions: config, counters, events, the store."""

    run_id: str
    task: str
    model: ModelClient
    tools: Mapping[str, Tool]
    policy: Policy
    clock: Clock
    sinks: Sequence[EventSink]
    workspace: Path | None = None
    system_prompt: str | None = None
    tool_timeout: float = 120.0
    done_tool: bool = False
    context_window: int | None = None
    started_at: float = 0.0
    deadline: float | None = None
    turns: int = 0
    tool_calls: int = 0
    usage: Usage = NO_USAGE
    iterations: int = 0
    check_reasons: list[str] = field(factory=list)
    store: SessionStore = field(factory=SessionStore)
    sessions: list[Session] = field(factory=list)
    extra_models: tuple[ModelClient, ...] = ()
    _table: ToolTable | None = field(default=None, repr=False)
    initial_reason: str | None = None
    """What a failed check before the first turn reported; the first builder session gets it."""
    now: Callable[[], float] = field(init=False, repr=False)
    """Reads `clock` (see `time_reader`); create the run inside the loop that drives it."""
    _emit_all: Callable[[Event], None] = field(init=False, repr=False)
    _emit_debug: Callable[[Event], None] = field(init=False, repr=False)
    description: str = field(init=False, repr=False)
    """What "done" means (the policy's description), read once for the run."""

    def __attrs_post_init__(self) -> None:
        self.description = self.policy.description()
        self.now = time_reader(self.clock)
        self._emit_all = fan_out([sink.emit for sink in self.sinks])
        self._emit_debug = fan_out(
            [sink.emit for sink in self.sinks if getattr(sink, "takes_debug", True) is not False]
        )

    @property
    def table(self) -> ToolTable:
        """`tools` as the loop uses them (see `ToolTable`): the one passed in as `table` while
        it is of these tools, otherwise worked out once."""
        table = self._table
        if table is None or table.tools is not self.tools:
            table = self._table = ToolTable.of(self.tools, done_tool=self.done_tool)
        return table

    @property
    def requires_known_cost(self) -> bool:
        return self.policy.requires_known_cost

    def elapsed(self) -> float:
        return self.now() - self.started_at

    def emit(self, event: Event) -> None:
        """Hand `event` to every sink, in order; a debug event only to the sinks that take
        debug events (see `EventSink`)."""
        (self._emit_debug if event.level == "debug" else self._emit_all)(event)

    def emitter_for(self, kind: type[Event]) -> Callable[[Event], None]:
        """What `emit` does with events of type `kind`, resolved once: for the events a loop
        emits every turn."""
        return self._emit_debug if kind.level == "debug" else self._emit_all

    def system_message(self, base: str | None = None) -> Message:
        """The system prompt: the caller's, what "done" means, and how feedback is marked."""
        how = (
            "reply with your final answer and no tool calls, or call the `done` tool"
            if self.done_tool
            else "reply with your final answer and no tool calls"
        )
        text = (
            f"{base or self.system_prompt or DEFAULT_SYSTEM_PROMPT}\n\n"
            f"## When the task is done\n{self.description}\n\n"
            f"When you believe the task is done, {how}. An automated completion check then "
            "verifies the work; if something is missing you will be told what, and you must "
            "keep working.\n\n"
            "Messages wrapped in <harness-feedback> come from the harness's automated checks "
            "and monitors, never from the user."
        )
        return Message.system(text)

    def new_session(
        self,
        *,
        agent: str = "builder",
        messages: Sequence[Message] | None = None,
        carry: str | None = None,
        model: ModelClient | None = None,
        tools: Mapping[str, Tool] | None = None,
        limit: Limit | None = None,
        on_claim: OnClaim = "check",
        stop_on_rejection: bool = False,
        policy: PolicySession | None = None,
    ) -> Session:
        """Open a fresh session: system prompt, the task, and `carry` as tagged feedback.

        Emits `iteration.started`; the run's iteration count is the number of sessions.
        """
        if model is not None:
            self.use_model(model)
        self.iterations += 1
        initial = (
            list(messages)
            if messages is not None
            else [self.system_message(), Message.user(self.task)]
        )
        session = Session(
            self,
            agent=agent,
            iteration=self.iterations,
            model=model or self.model,
            tools=self.tools if tools is None else tools,
            messages=initial,
            policy=policy or self.policy.start_session(clock=self.clock, limit=limit),
            limit=limit,
            on_claim=on_claim,
            stop_on_rejection=stop_on_rejection,
        )
        self.sessions.append(session)
        self.emit(IterationStarted(self.elapsed(), agent, self.iterations))
        if self.initial_reason is not None and agent == "builder":
            reason, self.initial_reason = self.initial_reason, None
            session.inject(
                "initial_check",
                "Before you started, the completion check looked at the work and reported "
                f"what is still missing:\n{reason}",
            )
        if carry is not None:
            session.inject("previous_iteration", carry)
        return session

    def use_model(self, model: ModelClient) -> None:
        """Take on a model besides the run's own (an evaluator, say): it reads the run's clock,
        and a scripted one is checked for unused lines when the run ends."""
        if model is self.model or any(m is model for m in self.extra_models):
            return
        self.extra_models = (*self.extra_models, model)
        bind_clock = getattr(model, "bind_clock", None)
        if callable(bind_clock):
            bind_clock(self.clock)

    def bare_snapshot(self) -> SessionStateSnapshot:
        """A snapshot with no session yet (for the check before the first turn): no turns,
        no messages, the builder's name. Built positionally, in field order, like a
        session's snapshot (tests/test_hot_path.py pins the order)."""
        now = self.now()
        return SessionStateSnapshot(
            self.run_id,
            self.task,
            "builder",
            0,
            self.workspace,
            (),
            (),
            HistoryView(self.check_reasons),
            0,
            0,
            NO_USAGE,
            self.turns,
            self.tool_calls,
            self.usage,
            self.started_at,
            now,
            self.deadline,
            False,
            None,
            self.store.frozen(),
            self.context_window,
            now,
        )

    async def check(self, snapshot: SessionStateSnapshot, policy: PolicySession) -> str | None:
        """Run the completion check outside a turn (fail closed) and record the verdict."""
        reason = await policy.check(snapshot)
        self.record_check(snapshot.agent, snapshot.turns, reason)
        return reason

    def record_check(self, agent: str, turn: int, reason: str | None) -> None:
        description = self.description
        if reason is None:
            self.emit(CheckPassed(self.elapsed(), agent, turn, description))
        else:
            self.check_reasons.append(reason)
            self.emit(CheckFailed(self.elapsed(), agent, turn, description, reason))

    def result(self, reason: HaltReason) -> RunResult:
        return RunResult(
            run_id=self.run_id,
            halt_reason=reason,
            sessions=tuple(
                SessionTranscript(s.agent, s.iteration, tuple(s.messages)) for s in self.sessions
            ),
            usage=self.usage,
            turns=self.turns,
            tool_calls=self.tool_calls,
            iterations=self.iterations,
            elapsed=self.elapsed(),
        )


def fan_out(emitters: Sequence[Callable[[Event], None]]) -> Callable[[Event], None]:
    """One callable that hands an event to each of `emitters` in order: a run emits a few
    events every turn, and a call per sink costs less than a method looping over them."""
    if len(emitters) == 1:
        return emitters[0]
    if len(emitters) == 2:
        first, second = emitters

        def emit_two(event: Event) -> None:
            first(event)
            second(event)

        return emit_two
    everyone = tuple(emitters)

    def emit_all(event: Event) -> None:
        for emit in everyone:
            emit(event)

    return emit_all


class SingleSession:
    """The plain loop: one session, the check's reasons injected until it passes or a halt."""

    name = "loop"

    async def run(self, run: Run) -> HaltReason:
        end = await run.new_session().run()
        assert end.reason is not None, "a checking session only ends with a halt"
        return end.reason


__all__ = ["DONE_TOOL", "DEFAULT_SYSTEM_PROMPT", "Run", "SingleSession", "Strategy"]
