"""One session: the turn loop that drives a model under a policy until it halts or claims done.

Each turn: budgets before the call, the call, usage accounted, tools run (concurrently, each
under its own deadline), then the policy decides after the turn. The loop stays flat: every
reason to stop is a `Decision` the policy returns or a `HaltReason` it names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import anyio
from attrs import evolve, frozen

from ._errors import ConfigurationError, ModelError
from ._events import (
    FeedbackInjected,
    SensorRead,
    ToolCalled,
    TurnFinished,
    TurnStarted,
)
from ._messages import NO_USAGE, Message, ModelRequest, ModelResponse, ToolCall, ToolSpec
from ._model import ModelClient
from ._policy import CONTINUE, Decision, Limit, PolicySession
from ._result import BudgetExceeded, HaltReason, ModelFailed
from ._state import HistoryView, SessionStateSnapshot, ToolOutcome
from ._tools import Tool, ToolContext, tool_error

if TYPE_CHECKING:
    from ._run import Run

DONE_TOOL = "done"
DONE_SPEC = ToolSpec(
    DONE_TOOL,
    "Call this when the task is completely done. An automated check then verifies the work.",
    {
        "type": "object",
        "properties": {"summary": {"type": "string", "description": "what you did"}},
        "additionalProperties": False,
    },
)

OnClaim = Literal["check", "return"]


InlineCall = Callable[[Mapping[str, Any]], tuple[str, bool]]


@frozen(eq=False)
class ToolTable:
    """A set of tools as the loop uses them, worked out once (a `Harness` keeps its own):
    the specs the model is shown, and the sync tools declared inline that take no
    `ToolContext`, which the loop calls directly."""

    tools: Mapping[str, Tool]
    specs: tuple[ToolSpec, ...]
    inline: Mapping[str, InlineCall]

    @classmethod
    def of(cls, tools: Mapping[str, Tool], *, done_tool: bool) -> ToolTable:
        specs = [t.spec for t in tools.values()]
        if done_tool:
            specs.append(DONE_SPEC)
        inline = {
            name: tool.run_inline
            for name, tool in tools.items()
            if tool.inline
            and not tool.is_async
            and tool.context_param is None
            and not (name == DONE_TOOL and done_tool)
        }
        return cls(tools, tuple(specs), inline)


@frozen
class SessionEnd:
    """Why a session stopped.

    `reason` is a halt (run-level, or `Completed`, or a session-scoped `BudgetExceeded`).
    Without one, the agent claimed done and the session was asked to return on a claim
    (`claimed`), or the check rejected the claim and the session stops on rejections.
    """

    reason: HaltReason | None
    snapshot: SessionStateSnapshot
    claimed: bool = False
    rejection: str | None = None


class Session:
    """A conversation with one agent; `run()` drives turns until the session ends."""

    def __init__(
        self,
        run: Run,
        *,
        agent: str,
        iteration: int,
        model: ModelClient,
        tools: Mapping[str, Tool],
        messages: Sequence[Message],
        policy: PolicySession,
        limit: Limit | None,
        on_claim: OnClaim,
        stop_on_rejection: bool,
    ) -> None:
        self._run = run
        self.agent = agent
        self.iteration = iteration
        self._model = model
        self._tools = tools
        table = run.table
        if table.tools is not tools:  # a session with tools of its own (an evaluator's)
            table = ToolTable.of(tools, done_tool=run.done_tool)
        self._specs = table.specs
        self._inline_tools = table.inline
        self._messages: list[Message] = list(messages)
        self._outcomes: list[ToolOutcome] = []
        # The latest view of each history (see `snapshot`).
        self._message_view = HistoryView(self._messages)
        self._outcome_view = HistoryView(self._outcomes)
        self._reasons_view = HistoryView(run.check_reasons)
        self._emit_called = run.emitter_for(ToolCalled)
        self._policy = policy
        # Asked once: a policy whose tool-call check can never halt is not asked per call.
        self._gates_tools = getattr(policy, "gates_tool_calls", True) is not False
        self._limit = limit
        self._on_claim: OnClaim = on_claim
        self._stop_on_rejection = stop_on_rejection
        self.turns = 0
        self.tool_calls = 0
        self.usage = NO_USAGE
        self.started_at = run.now()
        self._request_deadline = self._deadline()  # fixed for the session: asked once

    @property
    def messages(self) -> Sequence[Message]:
        return self._message_history()

    def _message_history(self) -> HistoryView[Message]:
        view = self._message_view
        if view._length != len(self._messages):
            view = self._message_view = HistoryView(self._messages)
        return view

    def snapshot(
        self, *, claims_done: bool = False, final_text: str | None = None, now: float | None = None
    ) -> SessionStateSnapshot:
        """The session as it is; `now` is a clock reading taken since the last await, if any."""
        run = self._run
        # A view never changes, so one is handed out again while its history has not grown:
        # checked inline, as a call would cost about what a new view does.
        messages = self._message_view
        if messages._length != len(self._messages):
            messages = self._message_view = HistoryView(self._messages)
        outcomes = self._outcome_view
        if outcomes._length != len(self._outcomes):
            outcomes = self._outcome_view = HistoryView(self._outcomes)
        reasons = self._reasons_view
        if reasons._items is not run.check_reasons or reasons._length != len(run.check_reasons):
            reasons = self._reasons_view = HistoryView(run.check_reasons)
        # Positional, in field order: the loop takes a snapshot every turn, and matching 22
        # keywords costs more than building the snapshot. tests/test_hot_path.py pins the order.
        return SessionStateSnapshot(
            run.run_id,
            run.task,
            self.agent,
            self.iteration,
            run.workspace,
            messages,
            outcomes,
            reasons,
            self.turns,
            self.tool_calls,
            self.usage,
            run.turns,
            run.tool_calls,
            run.usage,
            run.started_at,
            run.now() if now is None else now,
            run.deadline,
            claims_done,
            final_text,
            run.store.frozen(),
            run.context_window,
            self.started_at,
        )

    def inject(self, source: str, text: str) -> None:
        """Add tagged automated feedback that the next model request will carry."""
        self._append_feedback(Message.feedback(source, text))

    def _append_feedback(self, message: Message) -> None:
        """Deliver feedback with the next request.

        After a turn with tool calls it is appended to the last tool result (the call that
        triggered it), so providers that want tool results to follow the assistant message
        directly see no extra message; otherwise it is a message of its own.
        """
        messages = self._messages
        last = messages[-1] if messages else None
        if last is not None and last.role == "tool":
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

    async def run(self) -> SessionEnd:
        """Drive turns until the session ends (see `SessionEnd`)."""
        wall = self._limit.wall_time if self._limit is not None else None
        if wall is None:
            return await self._turns()
        with self._run.clock.deadline_scope(self.started_at + wall):
            return await self._turns()
        # Only reached when the session's own deadline cancelled the scope.
        used = self._run.now() - self.started_at
        return SessionEnd(BudgetExceeded("max_wall_time", used, wall, "session"), self.snapshot())

    async def _turns(self) -> SessionEnd:
        run = self._run
        policy = self._policy
        emit_started = run.emitter_for(TurnStarted)
        emit_finished = run.emitter_for(TurnFinished)
        agent, iteration = self.agent, self.iteration
        messages = self._messages
        complete = self._model.complete
        inline_tools = self._inline_tools
        check_claims = self._on_claim == "check"
        # The clock is read once after each await (the model call, the tools) and that reading
        # serves every snapshot and event up to the next one: nothing in between can wait.
        # A turn that ends with nothing to apply leaves its snapshot as the state the next
        # turn starts from: the session has not changed since, so it is not taken again.
        ready: SessionStateSnapshot | None = None
        while True:
            before = ready if ready is not None else self.snapshot()
            ready = None
            halt = policy.before_call(before)
            if halt is not None:
                return SessionEnd(halt, before)
            self.turns = turn = self.turns + 1
            run.turns += 1
            emit_started(TurnStarted(before.now - run.started_at, agent, iteration, turn))
            request = ModelRequest(
                self._message_history(),
                self._specs,
                agent,
                turn,
                self._request_deadline,
                run.workspace,
            )
            try:
                response = await complete(request)
            except ModelError as exc:
                return SessionEnd(ModelFailed(exc.kind, str(exc)), self.snapshot())
            self._account(response)
            calls = response.tool_calls
            messages.append(Message.assistant(response.text, calls))
            now = run.now()
            emit_finished(TurnFinished(now - run.started_at, agent, iteration, turn, response))

            final_text: str | None = response.text
            claims_done = not calls
            if calls:
                call = calls[0]
                inline = inline_tools.get(call.name) if len(calls) == 1 else None
                if inline is not None:
                    # The usual turn: one call, to an inline tool (never the done tool), which
                    # `before_call` admitted on this very snapshot (see `_admit`).
                    self.tool_calls += 1
                    run.tool_calls += 1
                    content, is_error = inline(call.arguments)
                    now = run.now()
                    self._record_tool(call, content, is_error, now - run.started_at)
                else:
                    admitted, halt = self._admit(calls, before)
                    self.tool_calls += len(admitted)
                    run.tool_calls += len(admitted)
                    results = self._run_inline(admitted)
                    if results is None:
                        results = await self._run_concurrently(admitted)
                    now = run.now()
                    done_summary = self._record_tools(calls, admitted, results, now)
                    if halt is not None:
                        return SessionEnd(halt, self.snapshot(now=now))
                    if done_summary is not None:
                        claims_done = True
                        final_text = done_summary or response.text

            snapshot = self.snapshot(
                claims_done=claims_done, final_text=final_text if claims_done else None, now=now
            )
            decision = await policy.after_turn(snapshot, run_check=claims_done and check_claims)
            if decision is CONTINUE and not claims_done:
                ready = snapshot  # CONTINUE carries nothing to emit or inject
                continue
            if decision is not CONTINUE:
                self._apply(decision)
            if decision.halt is not None:
                return SessionEnd(decision.halt, snapshot)
            if claims_done and not check_claims:  # the strategy judges the claim itself
                return SessionEnd(None, snapshot, claimed=True)
            if decision.rejection is not None and self._stop_on_rejection:
                return SessionEnd(None, snapshot, rejection=decision.rejection)

    def _deadline(self) -> float | None:
        """The earlier of the run's deadline and this session's own wall-time limit."""
        deadline = self._run.deadline
        wall = self._limit.wall_time if self._limit is not None else None
        if wall is not None:
            ends = self.started_at + wall
            deadline = ends if deadline is None else min(deadline, ends)
        return deadline

    def _account(self, response: ModelResponse) -> None:
        usage = response.usage
        if usage.cost_usd is None and self._run.requires_known_cost:
            raise ConfigurationError(
                "a cost budget is set but the model reported no price for this call "
                f"(model {response.model!r}); add its price or drop max_cost_usd"
            )
        run = self._run
        # While the run's total is this session's (its only session so far), it stays the same
        # value: one sum, not two.
        shared = run.usage is self.usage
        self.usage += usage
        run.usage = self.usage if shared else run.usage + usage

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
            run.record_check(self.agent, self.turns, decision.rejection)
        for message in decision.feedback:
            self._append_feedback(message)
        if decision.rejection is not None and decision.halt is None:
            self._append_feedback(rejection_feedback(decision.rejection))

    def _admit(
        self, calls: tuple[ToolCall, ...], before: SessionStateSnapshot
    ) -> tuple[tuple[ToolCall, ...], HaltReason | None]:
        """The calls the budgets let run (a prefix of `calls`) and, if some were refused, the
        halt. `before` is the snapshot the turn started from: no tool has run since, so its
        tool-call counts plus the calls admitted so far (`pending`) are exact. The first call
        is not asked about: `before_call` passed this very snapshot, and it refuses one whose
        tool-call count is used up (so a batch of one is admitted without a question)."""
        if self._gates_tools:
            for pending in range(1, len(calls)):
                halt = self._policy.before_tool_call(before, pending=pending)
                if halt is not None:
                    return calls[:pending], halt
        return calls, None

    def _run_inline(self, calls: tuple[ToolCall, ...]) -> list[tuple[str, bool]] | None:
        """Run the batch right here when every call is to an inline sync tool, in order (as a
        task group would: none of them yields); None when some call must be awaited."""
        inline = self._inline_tools
        fns: list[InlineCall] = []
        for call in calls:
            fn = inline.get(call.name)
            if fn is None:
                return None
            fns.append(fn)
        return [fn(call.arguments) for fn, call in zip(fns, calls, strict=True)]

    async def _run_concurrently(self, calls: tuple[ToolCall, ...]) -> list[tuple[str, bool]]:
        """Run the batch in a task group, each call under its own deadline."""
        if len(calls) == 1:
            return [await self._invoke(calls[0])]
        results = [("", False)] * len(calls)

        async def invoke_into(index: int, call: ToolCall) -> None:
            results[index] = await self._invoke(call)

        async with anyio.create_task_group() as group:
            for index, call in enumerate(calls):
                group.start_soon(invoke_into, index, call)
        return results

    def _record_tools(
        self,
        calls: tuple[ToolCall, ...],
        admitted: tuple[ToolCall, ...],
        results: list[tuple[str, bool]],
        now: float,
    ) -> str | None:
        """Record every call's result (refused calls too); return the done tool's summary."""
        run = self._run
        at = now - run.started_at
        done_summary: str | None = None
        for call, (content, is_error) in zip(admitted, results, strict=True):
            self._record_tool(call, content, is_error, at)
            if call.name == DONE_TOOL and run.done_tool and not is_error:
                summary = call.arguments.get("summary", "")
                done_summary = summary if isinstance(summary, str) else ""
        for call in calls[len(admitted) :]:
            self._record_tool(call, "not run: the tool-call budget is exhausted", True, at)
        return done_summary

    def _record_tool(self, call: ToolCall, content: str, is_error: bool, at: float) -> None:
        message = Message.tool_result(call, content, is_error=is_error)
        self._messages.append(message)
        outcome = ToolCalled(at, self.agent, self.turns, call, message.content, is_error)
        self._outcomes.append(outcome)
        self._emit_called(outcome)

    async def _invoke(self, call: ToolCall) -> tuple[str, bool]:
        run = self._run
        if call.name == DONE_TOOL and run.done_tool:
            return "completion claimed; the harness is verifying the work", False
        tool = self._tools.get(call.name)
        if tool is None:
            available = ", ".join(sorted(self._tools)) or "none"
            return f"error: unknown tool {call.name!r} (available: {available})", True
        timeout = tool.timeout if tool.timeout is not None else run.tool_timeout
        context = (
            ToolContext(run.workspace, run.store, run.clock, call, self.agent)
            if tool.context_param is not None
            else None
        )
        try:
            if tool.inline and not tool.is_async:
                # It runs on the loop with no checkpoint, so no deadline could interrupt it;
                # a cancel scope would cost more than most such calls and change nothing.
                return tool.call_inline(call.arguments, context), False
            with run.clock.deadline_scope(run.now() + timeout) as scope:
                content = await tool.invoke(call.arguments, context)
        except Exception as exc:
            return tool_error(exc), True
        if scope.cancelled_caught:
            return f"error: tool {call.name!r} timed out after {timeout:g}s", True
        return content, False


def rejection_feedback(reason: str) -> Message:
    """The message that carries a completion check's reason into the next turn."""
    return Message.feedback(
        "completion_check",
        "You claimed the task is done, but the completion check did not pass:\n"
        f"{reason}\n"
        "Keep working on what is missing, then claim done again.",
    )
