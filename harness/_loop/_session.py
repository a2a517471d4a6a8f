"""One session: the turn loop that drives a model under a policy until the session ends.

A turn is the model call, the tool calls it asks for, and the policy's decision. The policy's
budgets are asked before the session's first call and then, as the first step of every
decision, before each later one; every reason to stop is a named `HaltReason`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import anyio
from attrs import frozen

from .._clock import postpone
from .._errors import ConfigurationError, ModelError
from .._escalation import Escalates, JudgedTurn
from .._events._run import TurnFinished, TurnStarted
from .._events._tool import ToolOutcome
from .._halt import BudgetExceeded, HaltReason, ModelFailed
from .._limits import UsageLimit, UsageLimitError
from .._messages import NOT_EXECUTED, Message, ModelRequest, ModelResponse, ToolCall
from .._model import ModelClient
from .._policy import Decision, Limit, PolicySession
from .._protocols import implements
from .._state import HistoryView, SessionStateSnapshot
from .._tools._base import Tool
from .._usage import NO_USAGE
from .._work_progress import Assessment, WorkProgress
from ._feedback import (
    deliver,
    emit_readings,
    judged_turn,
    not_executed_feedback,
    observe,
    rejection_feedback,
)
from ._run_state import RunState
from ._tool_calls import DONE, DONE_TOOL, TurnTools, admit

if TYPE_CHECKING:
    from ._compaction import Compaction

OnClaim = Literal["check", "return"]


@frozen
class SessionEnd:
    """Why a session stopped.

    `reason` is a halt (run-level, or `Completed`, or a session-scoped `BudgetExceeded`).
    Without one, the agent claimed done and the session was asked to return on a claim
    (``on_claim="return"``), for its strategy to judge with `Session.check`.
    """

    reason: HaltReason | None
    snapshot: SessionStateSnapshot


class Session:
    """A conversation with one agent; `run()` drives turns until the session ends.

    With ``on_claim="check"`` a claim of done goes to the policy's completion check and the
    session ends only with a halt; with ``"return"`` the session returns the claim to its
    strategy, which judges it with `check`.
    """

    def __init__(
        self,
        run: RunState,
        *,
        agent: str,
        iteration: int,
        model: ModelClient,
        tools: Mapping[str, Tool],
        messages: Sequence[Message],
        policy: PolicySession,
        limit: Limit | None,
        on_claim: OnClaim,
    ) -> None:
        self._run = run
        self.agent = agent
        self.iteration = iteration
        self._model = model
        # A model ladder learns what each judged turn showed, to climb when the run plateaus.
        self._ladder = model if implements(model, Escalates) else None
        every = {**tools, DONE_TOOL: DONE} if run.done_tool else tools
        self._specs = tuple(tool.spec for tool in every.values())
        self._messages: list[Message] = list(messages)
        self._outcomes: list[ToolOutcome] = []
        self._tools = TurnTools(
            run, every, agent=agent, messages=self._messages, outcomes=self._outcomes
        )
        self._policy = policy
        self._limit = limit
        self._on_claim: OnClaim = on_claim
        self.turns = 0
        self.tool_calls = 0
        self.usage = NO_USAGE
        self._latest_input = 0  # the input tokens of the latest call, for compaction
        # Read once, not at every turn (the run's configuration is frozen): a run without
        # compaction never asks about it, nor one without a cost budget about prices.
        config = run.config
        self._compaction = config.compaction if config.context_window is not None else None
        self._requires_cost = config.policy.requires_known_cost
        self._workspace = config.workspace
        self.started_at = self._last_reading = run.now()
        self._paused = 0.0  # paused for usage limits, not counted toward wall time
        self._limits_in_a_row = 0  # usage limits since the last answer (see `_pause`)
        self._scope: anyio.CancelScope | None = None
        self._wall_time = limit.wall_time if limit is not None else None
        self._deadline = _earlier(
            run.deadline, None if self._wall_time is None else self.started_at + self._wall_time
        )

    @property
    def messages(self) -> Sequence[Message]:
        """The conversation so far (a view: it does not copy the history)."""
        return HistoryView(self._messages)

    def snapshot(
        self, *, claims_done: bool = False, final_text: str | None = None, now: float | None = None
    ) -> SessionStateSnapshot:
        """The session as it is at `now` (see `RunState.snapshot`); the histories are views,
        not copies."""
        return self._run.snapshot(
            agent=self.agent,
            iteration=self.iteration,
            messages=HistoryView(self._messages),
            tool_outcomes=HistoryView(self._outcomes),
            turns=self.turns,
            tool_calls=self.tool_calls,
            usage=self.usage,
            session_started_at=self.started_at + self._paused,
            claims_done=claims_done,
            final_text=final_text,
            now=now,
        )

    def inject(self, source: str, text: str) -> None:
        """Add tagged automated feedback that the next model request will carry."""
        self._append_feedback(Message.feedback(source, text))

    async def check(self, snapshot: SessionStateSnapshot) -> str | None:
        """Run the completion check on `snapshot` outside a turn, through this session's
        policy (fail closed), with the verifier as the run found it (`RunState.judge`), and
        record the verdict; None when the work is complete."""
        return (await self.assess(snapshot)).reason

    async def assess(self, snapshot: SessionStateSnapshot) -> Assessment:
        """As `check`, with the progress the check measured (None when it does not measure)."""
        assessed = await self._run.judge(snapshot, self._policy.assess)
        self._run.record_check(
            snapshot.agent, snapshot.turns, assessed.reason, assessed.error, assessed.flaky
        )
        self.report_verdict(assessed.reason, assessed.progress)
        return assessed

    def report_verdict(self, reason: str | None, progress: WorkProgress | None = None) -> None:
        """Tell the session's model, when it is a ladder (`Escalates`), a verdict reached on
        the work: the policy's check at a strategy's request (`assess` does this), or one the
        strategy reached itself (an evaluator's). A rejection counts toward a climb as the
        completion check's own do; `reason` None is a pass."""
        if self._ladder is not None:
            verdict = JudgedTurn(self.agent, self.turns, True, reason, progress)
            observe(self._run, self._ladder, verdict)

    async def run(self) -> SessionEnd:
        """Drive turns until the session ends (see `SessionEnd`), within its own wall time."""
        if self._wall_time is None:
            return await self._turns()
        with self._run.clock.deadline_scope(self.started_at + self._wall_time) as scope:
            self._scope = scope
            try:
                return await self._turns()
            finally:
                self._scope = None
        # Reached only when the session's own deadline cancelled the scope.
        used = self._run.now() - self.started_at - self._paused
        limit = BudgetExceeded("max_wall_time", used, self._wall_time, "session")
        return SessionEnd(limit, self.snapshot())

    async def _turns(self) -> SessionEnd:
        snapshot = self.snapshot()
        halt = self._policy.before_call(snapshot)
        while halt is None:
            try:
                if self._compaction is not None:
                    halt = await self._compact(self._compaction)
                    if halt is not None:
                        break
                response = await self._call_model()
                self._limits_in_a_row = 0
            except UsageLimitError as exc:
                self.turns -= 1  # the turn the limit cut off was not executed
                self._run.turns -= 1
                halt = await self._pause(exc.limit)
                continue  # the same turn again, or the halt
            except ModelError as exc:
                halt = ModelFailed(exc.kind, str(exc))
                break
            halt, done_summary = await self.run_tool_calls(response.tool_calls, snapshot)
            if halt is not None:
                break
            executed = response.stop_reason != NOT_EXECUTED
            claims_done = executed and (not response.tool_calls or done_summary is not None)
            if not executed:
                self.inject("harness", not_executed_feedback(response.text))
            snapshot = self.snapshot(
                claims_done=claims_done,
                final_text=(done_summary or response.text) if claims_done else None,
                now=self._last_reading,
            )
            if claims_done and self._on_claim == "check":
                decision = await self._judge_claim(snapshot)
            else:
                decision = await self._policy.after_turn(snapshot, run_check=False)
            self._apply(decision)
            if decision.halt is not None:
                return SessionEnd(decision.halt, snapshot)
            if decision.checked and self._run.check_broken is not None:
                return SessionEnd(self._run.check_broken, snapshot)
            if decision.rejection is not None and self._run.checkpoints is not None:
                from ._checkpointing import after_rejection  # only a run that checkpoints

                await after_rejection(
                    self._run,
                    agent=self.agent,
                    iteration=self.iteration,
                    turn=self.turns,
                    progress=decision.progress,
                )
            if claims_done and self._on_claim == "return":  # the strategy judges the claim
                return SessionEnd(None, snapshot)
        return SessionEnd(halt, self.snapshot())

    async def _judge_claim(self, snapshot: SessionStateSnapshot) -> Decision:
        """The policy's decision after a turn that claims done, which runs the completion
        check: the claim is judged with the verifier as the run found it (`RunState.judge`)."""
        policy = self._policy

        async def decide(judged: SessionStateSnapshot) -> Decision:
            return await policy.after_turn(judged, run_check=True)

        return await self._run.judge(snapshot, decide)

    async def _call_model(self) -> ModelResponse:
        """One model call: counted, announced, accounted and appended to the conversation."""
        run = self._run
        self.turns += 1
        run.turns += 1
        run.emit(TurnStarted(run.elapsed(), self.agent, self.iteration, self.turns))
        request = ModelRequest(
            messages=HistoryView(self._messages),
            tools=self._specs,
            agent=self.agent,
            turn=self.turns,
            deadline=self._deadline,
            workspace=self._workspace,
        )
        response = await self._complete(request)
        self._latest_input = response.usage.input_tokens
        self._messages.append(Message.assistant(response.text, response.tool_calls))
        at = self._last_reading - run.started_at
        run.emit(TurnFinished(at, self.agent, self.iteration, self.turns, response))
        return response

    async def _pause(self, limit: UsageLimit) -> HaltReason | None:
        """Wait out a usage limit (`harness._loop._pausing`): None once the turn may run
        again, or the `UsageLimitReached` that ends the session."""
        from ._pausing import wait_out  # only a run that meets a limit pauses

        again = self._limits_in_a_row  # > 0: the turn that woke from a pause met one again
        self._limits_in_a_row += 1
        return await wait_out(
            self._run,
            limit,
            again=again,
            agent=self.agent,
            iteration=self.iteration,
            turn=self.turns + 1,
            read_clock=self._read_clock,
            postpone=self._postpone,
        )

    def _postpone(self, seconds: float) -> None:
        """Move the run's and this session's wall-time deadlines `seconds` later."""
        run = self._run
        run.paused += seconds
        self._paused += seconds
        if run.deadline is not None:
            run.deadline += seconds
        if self._deadline is not None:
            self._deadline += seconds
        scopes = [*run.wall_scopes, *([self._scope] if self._scope is not None else [])]
        for scope in scopes:
            postpone(run.clock, scope, seconds)

    async def _compact(self, compaction: Compaction) -> HaltReason | None:
        """Compact the older turns when the conversation nears the context window
        (`harness._loop._compacting`); after a summary, a model call, the budgets' halt."""
        from ._compacting import compact  # only a run that compacts

        compacted = await compact(
            compaction,
            self._run,
            self._messages,
            latest_input=self._latest_input,
            agent=self.agent,
            turn=self.turns,
            summarise=self._complete,
        )
        if compacted is None:
            return None
        # The latest call's input tokens measured the conversation before this compaction.
        self._latest_input = 0
        return self._policy.before_call(self.snapshot()) if compacted else None

    async def _complete(self, request: ModelRequest) -> ModelResponse:
        """The model's response to `request`, the clock read after it and its usage counted."""
        response = await self._model.complete(request)
        self._read_clock()
        self._account(response)
        return response

    def _read_clock(self) -> float:
        """Read the clock after an await; until the next await every event and snapshot
        uses this reading (nothing between two awaits can take time worth measuring)."""
        self._last_reading = self._run.now()
        return self._last_reading

    async def run_tool_calls(
        self, calls: Sequence[ToolCall], snapshot: SessionStateSnapshot
    ) -> tuple[HaltReason | None, str | None]:
        """Admit each call against the tool-call budget, run the admitted ones, and record
        every result (a refused call's too).

        `snapshot` is the state before this turn's calls; each call is admitted with the
        calls admitted before it counted as pending. Admitted calls run concurrently, each
        under its own deadline, and never raise: an error is a result the model sees. Returns
        the budget's halt if it refused a call, and the `done` tool's summary if the agent
        claimed done with it.
        """
        admitted, halt = admit(calls, snapshot, self._policy)
        self.tool_calls += len(admitted)
        self._run.tool_calls += len(admitted)
        results = []
        if admitted:
            results = await self._tools.call(admitted)
            self._read_clock()
        at = self._last_reading - self._run.started_at
        return halt, self._tools.record(calls, results, turn=self.turns, at=at)

    def _account(self, response: ModelResponse) -> None:
        """Add the call's usage to the session's and the run's. A cost that is not a finite
        number >= 0 (a provider's NaN) is refused: the run halts `ModelFailed("malformed")`
        rather than carry a figure no budget can compare (NaN never trips ``max_cost_usd``)."""
        usage = response.usage
        cost = usage.cost_usd
        if cost is not None and not (math.isfinite(cost) and cost >= 0):
            raise ModelError(
                f"the model reported a cost of {cost!r} USD for this call (model "
                f"{response.model!r}): not a finite number >= 0",
                kind="malformed",
            )
        if cost is None and self._requires_cost:
            raise ConfigurationError(
                "a cost budget is set but the model reported no price for this call "
                f"(model {response.model!r}); add its price or drop max_cost_usd"
            )
        self.usage += usage
        self._run.usage += usage

    def _apply(self, decision: Decision) -> None:
        """Emit what the policy saw and inject its feedback into the next request."""
        run = self._run
        if decision.readings:  # most turns: every sensor read ok
            emit_readings(run, decision.readings, agent=self.agent, turn=self.turns)
        if decision.checked:
            run.record_check(
                self.agent, self.turns, decision.rejection, decision.error, decision.flaky
            )
        for message in decision.feedback:
            self._append_feedback(message)
        if decision.rejection is not None and decision.halt is None:
            self._append_feedback(rejection_feedback(decision.rejection))
        if self._ladder is not None and decision.halt is None:
            observe(run, self._ladder, judged_turn(self.agent, self.turns, decision))

    def _append_feedback(self, message: Message) -> None:
        deliver(self._run, self._messages, message, agent=self.agent, turn=self.turns)


def _earlier(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return b if a is None else a
    return min(a, b)
