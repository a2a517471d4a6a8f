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
from attrs import evolve, frozen

from .._clock import postpone
from .._errors import ConfigurationError, FixtureError, ModelError
from .._escalation import Escalates, JudgedTurn
from .._events._escalation import ModelEscalated
from .._events._run import FeedbackInjected, SensorRead, ToolCalled, TurnFinished, TurnStarted
from .._limits import UsageLimit, UsageLimitError
from .._messages import NO_USAGE, NOT_EXECUTED, Message, ModelRequest, ModelResponse, ToolCall
from .._model import ModelClient
from .._policy import Decision, Limit, PolicySession
from .._protocols import implements
from .._result import BudgetExceeded, HaltReason, ModelFailed, UsageLimitReached
from .._state import HistoryView, SessionStateSnapshot, ToolOutcome
from .._tools._base import Tool, ToolContext, ToolResult
from .._tools._raw_arguments import refusal
from .._work_progress import Assessment, WorkProgress
from ._repeated_calls import RecentFailures
from ._run_state import RunState

if TYPE_CHECKING:
    from ._compaction import Compaction

DONE_TOOL = "done"


def _claim_done(summary: str = "") -> str:
    return "completion claimed; the harness is verifying the work"


DONE = Tool(
    name=DONE_TOOL,
    description=(
        "Call this when the task is completely done. An automated check then verifies the work."
    ),
    parameters={
        "type": "object",
        "properties": {"summary": {"type": "string", "description": "what you did"}},
        "additionalProperties": False,
    },
    fn=_claim_done,
    inline=True,
)
"""The tool a `Harness(done_tool=True)` offers: an explicit way to claim the task is done."""

NOT_RUN = ToolResult("not run: the tool-call budget is exhausted", is_error=True)

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
        self._tools = {**tools, DONE_TOOL: DONE} if run.done_tool else dict(tools)
        self._specs = tuple(tool.spec for tool in self._tools.values())
        self._messages: list[Message] = list(messages)
        self._outcomes: list[ToolOutcome] = []
        self._failures = RecentFailures()  # the latest turn's failed calls, to note a repeat
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
        self._tool_timeout = config.tool_timeout
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
            self._observe(self._ladder, verdict)

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
                await self._run.checkpoint(
                    f"claim rejected ({self.agent}, iteration {self.iteration}, turn {self.turns})",
                    decision.progress,
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
        response = await self._model.complete(request)
        self._read_clock()
        self._account(response)
        self._latest_input = response.usage.input_tokens
        self._messages.append(Message.assistant(response.text, response.tool_calls))
        at = self._last_reading - run.started_at
        run.emit(TurnFinished(at, self.agent, self.iteration, self.turns, response))
        return response

    async def _pause(self, limit: UsageLimit) -> HaltReason | None:
        """Wait out a usage limit on the run's clock (see `PauseSettings`): None once it is
        over and the turn may run again, or `UsageLimitReached` when the run will not wait: a
        terminal limit, or a wait past `max_pause`, `max_total_pause` or `max_pauses`.

        The turn the limit cut off was not executed: it is taken off the turn counts.
        """
        from .._events._pause import RunPaused, RunResumed  # only a run that meets a limit pauses

        run = self._run
        self.turns -= 1
        run.turns -= 1
        turn = self.turns + 1
        settings = run.config.pause
        seed = f"{run.task}|{self.agent}|{self.iteration}|{turn}|{limit.retry_in}"
        again = self._limits_in_a_row  # > 0: the turn that woke from a pause met one again
        self._limits_in_a_row += 1
        wait = 0.0 if limit.terminal else settings.wait_for(limit, seed, again=again)
        bound: tuple[str, float] | None = None
        if limit.terminal:
            bound = ("terminal", 0.0)
        elif wait > settings.max_pause:
            bound = ("max_pause", settings.max_pause)
        elif run.pauses >= settings.max_pauses:
            bound = ("max_pauses", settings.max_pauses)
        elif run.paused_total + wait > settings.max_total_pause:
            bound = ("max_total_pause", settings.max_total_pause)
        if bound is not None:
            return UsageLimitReached(
                limit.source, limit.message, limit.retry_in, wait, bound[1], bound[0]
            )
        run.pauses += 1
        counted = settings.counts_toward_wall_time
        paused_at = run.now()
        run.emit(
            RunPaused(
                paused_at - run.started_at,
                self.agent,
                self.iteration,
                turn,
                limit.source,
                limit.message,
                limit.retry_in,
                limit.resets_at,
                wait,
                counted,
            )
        )
        if not counted:  # move the deadlines first, so that none fires during the wait
            self._postpone(wait)
        await run.clock.sleep(wait)
        self._read_clock()
        paused_for = self._last_reading - paused_at
        run.paused_total += paused_for
        if not counted and paused_for != wait:
            self._postpone(paused_for - wait)
        at = self._last_reading - run.started_at
        run.emit(RunResumed(at, self.agent, self.iteration, turn, paused_for, counted))
        return None

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
        """Compact the older turns when the conversation nears the context window (see
        `harness._loop._compaction`). A summary is a model call: the budgets are asked again after
        it, and their halt is returned."""
        run = self._run
        window = run.config.context_window
        assert window is not None, "a session compacts only with a context window"
        messages = self._messages
        # Loaded only by a run that compacts (a Harness given `compaction`).
        from .._events._context import ContextCompacted
        from ._compaction import drop_tool_outputs, summary_message, summary_request

        if not compaction.due(messages, self._latest_input, window):
            return None
        start, end = compaction.span(messages)
        tokens = compaction.size(messages, self._latest_input)
        chars = sum(len(m.content) for m in messages)
        summary: str | None = None
        usage = NO_USAGE
        if compaction.method == "drop_tool_outputs":
            calls = drop_tool_outputs(messages, start, end)
            replaced = len(calls)
        elif sum(m.role == "assistant" for m in messages[start:end]) >= 2:
            request = summary_request(messages, start, end, agent=self.agent, turn=self.turns)
            response = await self._model.complete(request)
            self._read_clock()
            self._account(response)
            summary, usage = response.text, response.usage
            calls = [m.tool_call_id or "" for m in messages[start:end] if m.role == "tool"]
            messages[start:end] = [summary_message(summary)]
            replaced = end - start
        else:
            return None  # too little to summarise yet
        if not replaced:
            return None
        # The latest call's input tokens measured the conversation before this compaction.
        self._latest_input = 0
        after = sum(len(m.content) for m in messages)
        run.emit(
            ContextCompacted(
                run.elapsed(),
                self.agent,
                self.turns,
                compaction.method,
                replaced,
                tuple(calls),
                tokens,
                chars,
                after,
                summary,
                usage,
            )
        )
        return None if summary is None else self._policy.before_call(self.snapshot())

    def _read_clock(self) -> None:
        """Read the clock after an await; until the next await every event and snapshot
        uses this reading (nothing between two awaits can take time worth measuring)."""
        self._last_reading = self._run.now()

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
        run = self._run
        admitted: list[ToolCall] = []
        halt: HaltReason | None = None
        for call in calls:
            halt = self._policy.before_tool_call(snapshot, pending=len(admitted))
            if halt is not None:
                break
            admitted.append(call)
        self.tool_calls += len(admitted)
        run.tool_calls += len(admitted)
        if admitted:
            ran = await self._call_tools(admitted)
            self._read_clock()
            failures = self._failures
            results = [failures.note(c, r) for c, r in zip(admitted, ran, strict=True)]
            failures.remember(admitted, ran)
        else:
            results = []
        at = self._last_reading - run.started_at
        done_summary: str | None = None
        for call, result in zip(admitted, results, strict=True):
            self._record(call, result, at)
            if call.name == DONE_TOOL and run.done_tool and not result.is_error:
                summary = call.arguments.get("summary", "")
                done_summary = summary if isinstance(summary, str) else ""
        for call in calls[len(admitted) :]:
            self._record(call, NOT_RUN, at)
        return halt, done_summary

    async def _call_tools(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        if len(calls) == 1:  # the usual turn: no task group needed
            return [await self._call_tool(calls[0])]
        results = [NOT_RUN] * len(calls)

        async def call_into(index: int, call: ToolCall) -> None:
            results[index] = await self._call_tool(call)

        try:
            async with anyio.create_task_group() as group:
                for index, call in enumerate(calls):
                    group.start_soon(call_into, index, call)
        except* FixtureError as group:
            # A replayed tool (an MCP server's recording) that diverged stops the run as a
            # diverging model does: with the fixture's own error, not a group of them.
            raise group.exceptions[0] from None
        return results

    async def _call_tool(self, call: ToolCall) -> ToolResult:
        tool = self._tools.get(call.name)
        if tool is None:
            available = ", ".join(sorted(self._tools)) or "none"
            return ToolResult(f"error: unknown tool {call.name!r} (available: {available})", True)
        refused = refusal(call.arguments)
        if refused is not None:  # JSON text no parser could read: the model hears why
            return ToolResult(refused, is_error=True)
        run = self._run
        context = ToolContext(
            self._workspace, run.store, run.config.clock, call, self.agent, run.protected
        )
        time_limit = tool.timeout if tool.timeout is not None else self._tool_timeout
        return await tool.call(call.arguments, context, time_limit=time_limit)

    def _record(self, call: ToolCall, result: ToolResult, at: float) -> None:
        message = Message.tool_result(call, result.content, is_error=result.is_error)
        self._messages.append(message)
        outcome = ToolCalled(at, self.agent, self.turns, call, message.content, result.is_error)
        self._outcomes.append(outcome)
        self._run.emit(outcome)

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
        for reading in decision.readings:
            run.emit(
                SensorRead(
                    run.elapsed(),
                    self.agent,
                    self.turns,
                    reading.sensor,
                    reading.status,
                    reading.message,
                )
            )
        if decision.checked:
            run.record_check(
                self.agent, self.turns, decision.rejection, decision.error, decision.flaky
            )
        for message in decision.feedback:
            self._append_feedback(message)
        if decision.rejection is not None and decision.halt is None:
            self._append_feedback(rejection_feedback(decision.rejection))
        if self._ladder is not None and decision.halt is None:
            warnings = tuple(
                f"{r.sensor}: {r.message}" for r in decision.readings if r.status == "warn"
            )
            seen = JudgedTurn(
                self.agent,
                self.turns,
                decision.checked,
                decision.rejection,
                decision.progress,
                warnings,
            )
            self._observe(self._ladder, seen)

    def _observe(self, ladder: Escalates, judged: JudgedTurn) -> None:
        """Tell the model ladder what a judged turn showed; record its climb, if any."""
        climb = ladder.observe(judged)
        if climb is not None:
            run = self._run
            run.emit(
                ModelEscalated(
                    run.elapsed(),
                    judged.agent,
                    judged.turn,
                    climb.from_rung,
                    climb.to_rung,
                    climb.from_model,
                    climb.to_model,
                    climb.trigger,
                    climb.detail,
                )
            )

    def _append_feedback(self, message: Message) -> None:
        """Deliver feedback with the next request.

        After a turn with tool calls it is appended to the last tool result (the call that
        triggered it), so providers that want tool results to follow the assistant message
        directly see no extra message; otherwise it is a message of its own.
        """
        messages = self._messages
        if messages and messages[-1].role == "tool":
            last = messages[-1]
            messages[-1] = evolve(
                last,
                content=f"{last.content}\n\n{message.content}",
                feedback_source=message.feedback_source,
            )
        else:
            messages.append(message)
        self._run.emit(
            FeedbackInjected(
                self._run.elapsed(),
                self.agent,
                self.turns,
                message.feedback_source or "harness",
                message.content,
            )
        )


def rejection_feedback(reason: str) -> Message:
    """The message that carries a completion check's reason into the next turn."""
    return Message.feedback(
        "completion_check",
        "You claimed the task is done, but the completion check did not pass:\n"
        f"{reason}\n"
        "Keep working on what is missing, then claim done again.",
    )


def not_executed_feedback(output: str) -> str:
    """What the agent is told after a turn that did no work."""
    said = output.strip()
    shown = f" It printed only:\n{said[-1000:]}" if said else " It printed nothing."
    return (
        f"Your last turn did no work, so it was not counted as a claim of done.{shown}\n"
        "Carry on with the task."
    )


def _earlier(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return b if a is None else a
    return min(a, b)
