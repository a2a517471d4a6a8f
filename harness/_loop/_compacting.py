"""Compacting a session's conversation before a model call (see `harness._loop._compaction`).

The session's turn loop calls `compact` before each model call of a run with a context
window; the measuring, the two methods and the ``context.compacted`` event are here. Loaded
only by a run that compacts (a Harness given `compaction`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from .._events._context import ContextCompacted
from .._messages import Message, ModelRequest, ModelResponse
from .._usage import NO_USAGE
from ._compaction import Compaction, drop_tool_outputs, summary_message, summary_request

if TYPE_CHECKING:
    from ._run_state import RunState


async def compact(
    compaction: Compaction,
    run: RunState,
    messages: list[Message],
    *,
    latest_input: int,
    agent: str,
    turn: int,
    summarise: Callable[[ModelRequest], Awaitable[ModelResponse]],
) -> bool | None:
    """Compact the older turns of `messages` in place when the conversation nears the
    context window, and emit ``context.compacted``: None when nothing was compacted, else
    whether a summary replaced them. A summary is a model call (`summarise`, which accounts
    for it), after which the session asks its budgets again.

    `latest_input` is the input tokens of the latest model call (which measured the
    conversation before this compaction).
    """
    window = run.config.context_window
    assert window is not None, "a session compacts only with a context window"
    if not compaction.due(messages, latest_input, window):
        return None
    start, end = compaction.span(messages)
    tokens = compaction.size(messages, latest_input)
    chars = sum(len(m.content) for m in messages)
    summary: str | None = None
    usage = NO_USAGE
    if compaction.method == "drop_tool_outputs":
        calls = drop_tool_outputs(messages, start, end)
        replaced = len(calls)
    elif sum(m.role == "assistant" for m in messages[start:end]) >= 2:
        response = await summarise(summary_request(messages, start, end, agent=agent, turn=turn))
        summary, usage = response.text, response.usage
        calls = [m.tool_call_id or "" for m in messages[start:end] if m.role == "tool"]
        messages[start:end] = [summary_message(summary)]
        replaced = end - start
    else:
        return None  # too little to summarise yet
    if not replaced:
        return None
    after = sum(len(m.content) for m in messages)
    run.emit(
        ContextCompacted(
            run.elapsed(),
            agent,
            turn,
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
    return summary is not None
