"""A turn's tool calls: admitted against the tool-call budget, run, and recorded.

The session's turn loop admits each call of a model response (`admit`) and hands the admitted
ones to its `TurnTools`: they run concurrently, each under its own deadline,
and never raise (an error is a result the model sees); a repeated failure gets a note; every
call, a refused one too, is recorded in the conversation and as a ``tool.called`` event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import anyio

from .._errors import FixtureError
from .._events._tool import ToolCalled, ToolOutcome
from .._halt import HaltReason
from .._messages import Message, ToolCall
from .._policy import PolicySession
from .._state import SessionStateSnapshot
from .._tools._base import Tool, ToolContext, ToolResult
from .._tools._raw_arguments import refusal
from ._repeated_calls import RecentFailures
from ._run_state import RunState

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


def admit(
    calls: Sequence[ToolCall], snapshot: SessionStateSnapshot, policy: PolicySession
) -> tuple[list[ToolCall], HaltReason | None]:
    """The calls the tool-call budget admits, in order, each with the calls admitted before
    it counted as pending; and the budget's halt when it refused one (and the rest)."""
    admitted: list[ToolCall] = []
    for call in calls:
        halt = policy.before_tool_call(snapshot, pending=len(admitted))
        if halt is not None:
            return admitted, halt
        admitted.append(call)
    return admitted, None


class TurnTools:
    """The tools of one session, and the record of their calls in the session's `messages`
    and `outcomes` (the lists the session holds)."""

    def __init__(
        self,
        run: RunState,
        tools: Mapping[str, Tool],
        *,
        agent: str,
        messages: list[Message],
        outcomes: list[ToolOutcome],
    ) -> None:
        self._run = run
        self.tools = tools
        self._agent = agent
        self._messages = messages
        self._outcomes = outcomes
        self._failures = RecentFailures()  # the latest turn's failed calls, to note a repeat

    async def call(self, admitted: Sequence[ToolCall]) -> list[ToolResult]:
        """Run the admitted calls; each result carries a note when it repeats a failure."""
        ran = await self._call_tools(admitted)
        failures = self._failures
        if not failures and not any(r.is_error for r in ran):
            return ran  # the usual turn: nothing to note, nothing to remember
        results = [failures.note(c, r) for c, r in zip(admitted, ran, strict=True)]
        failures.remember(admitted, ran)
        return results

    def record(
        self,
        calls: Sequence[ToolCall],
        results: Sequence[ToolResult],
        *,
        turn: int,
        at: float,
    ) -> str | None:
        """Record each call with its result (`NOT_RUN` past the results: refused by the
        budget); the `done` tool's summary when the agent claimed done with it."""
        done_summary: str | None = None
        done_tool = self._run.done_tool
        for call, result in zip(calls, results, strict=False):
            self._record(call, result, turn, at)
            if call.name == DONE_TOOL and done_tool and not result.is_error:
                summary = call.arguments.get("summary", "")
                done_summary = summary if isinstance(summary, str) else ""
        for call in calls[len(results) :]:
            self._record(call, NOT_RUN, turn, at)
        return done_summary

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
        tool = self.tools.get(call.name)
        if tool is None:
            available = ", ".join(sorted(self.tools)) or "none"
            return ToolResult(f"error: unknown tool {call.name!r} (available: {available})", True)
        refused = refusal(call.arguments)
        if refused is not None:  # JSON text no parser could read: the model hears why
            return ToolResult(refused, is_error=True)
        run = self._run
        config = run.config
        context = ToolContext(
            config.workspace, run.store, config.clock, call, self._agent, run.protected
        )
        time_limit = tool.timeout if tool.timeout is not None else config.tool_timeout
        return await tool.call(call.arguments, context, time_limit=time_limit)

    def _record(self, call: ToolCall, result: ToolResult, turn: int, at: float) -> None:
        message = Message.tool_result(call, result.content, is_error=result.is_error)
        self._messages.append(message)
        outcome = ToolCalled(at, self._agent, turn, call, message.content, result.is_error)
        self._outcomes.append(outcome)
        self._run.emit(outcome)
