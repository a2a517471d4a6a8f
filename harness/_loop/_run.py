"""A run in progress: the handle a strategy drives, and the `Strategy` protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from attrs import define, field

from .._events._run import IterationStarted
from .._halt import HaltReason
from .._messages import Message
from .._model import ModelClient, ReadsClock
from .._policy import Limit, PolicySession
from .._protocols import implements
from .._result import AttemptResult, RunResult, SessionTranscript
from .._state import SessionStateSnapshot
from .._tools._base import Tool
from .._work_progress import Assessment
from ._run_state import DEFAULT_SYSTEM_PROMPT, RunState
from ._session import OnClaim, Session


@runtime_checkable
class Strategy(Protocol):
    """How a run uses sessions: one loop, fresh Ralph iterations, build-then-evaluate, ..."""

    @property
    def name(self) -> str: ...

    async def run(self, run: Run) -> HaltReason:
        """Drive sessions until the run halts; return why."""
        ...


@runtime_checkable
class CheckpointsTheStart(Protocol):
    """A strategy that needs the run's start checkpointed with the progress the check
    measures there (Ralph rolling back to it): the `Harness` then takes that checkpoint even
    without ``checkpoints=True``, before the strategy runs."""

    @property
    def measures_start(self) -> bool: ...


@define(eq=False, kw_only=True)
class Run(RunState):
    """One run as its strategy sees it: the shared state, plus opening sessions and the
    completion check outside a turn."""

    iterations: int = 0
    sessions: list[Session] = field(factory=list)
    extra_models: tuple[ModelClient, ...] = ()
    initial_reason: str | None = None
    """What a failed check before the first turn reported; the first builder session gets it."""
    attempts: list[AttemptResult] = field(factory=list)
    """A best-of strategy's attempts, for the result."""

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
        policy: PolicySession | None = None,
    ) -> Session:
        """Open a fresh session: system prompt, the task, and `carry` as tagged feedback.

        Emits `iteration.started`; the run's iteration count is the number of sessions.
        """
        if model is not None:
            self.use_model(model)
        self.iterations += 1
        # The session keeps its own copy of `messages`.
        initial = (
            messages if messages is not None else (self.system_message(), Message.user(self.task))
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
        )
        self.sessions.append(session)
        # The session read the clock as it opened, with no await since: the same instant.
        at = session.started_at - self.started_at
        self.emit(IterationStarted(at, agent, self.iterations))
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
        if implements(model, ReadsClock):
            model.bind_clock(self.clock)

    async def check(self, snapshot: SessionStateSnapshot, policy: PolicySession) -> str | None:
        """Run the completion check outside a turn (fail closed) and record the verdict."""
        return (await self.assess(snapshot, policy)).reason

    async def assess(self, snapshot: SessionStateSnapshot, policy: PolicySession) -> Assessment:
        """As `check`, with the progress the check measured."""
        assessed = await self.judge(snapshot, policy.assess)
        self.record_check(
            snapshot.agent, snapshot.turns, assessed.reason, assessed.error, assessed.flaky
        )
        return assessed

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
            baselines=tuple(self.baselines),
            tampering=tuple(self.tampering),
            attempts=tuple(self.attempts),
        )


class SingleSession:
    """The plain loop: one session, the check's reasons injected until it passes or a halt."""

    name = "loop"

    async def run(self, run: Run) -> HaltReason:
        end = await run.new_session().run()
        assert end.reason is not None, "a checking session only ends with a halt"
        return end.reason


__all__ = ["DEFAULT_SYSTEM_PROMPT", "CheckpointsTheStart", "Run", "SingleSession", "Strategy"]
