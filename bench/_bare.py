"""The reference: a bare event-loop agent loop doing the harness workload's work, nothing more.

History is a list of dicts; the scripted model answers by awaiting the backend's own sleep
(0 s in W1: one trip through the event loop, as any I/O would; 10 ms in W2) and returning a
pre-built response; the `add` tool runs once per turn; a final answer without tool calls ends
the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from _backends import Sleep

Response = dict[str, Any]


def bare_script(turns: int) -> list[Response]:
    """`turns` responses with one `add` call each (arguments vary per turn), then a final one."""
    calls = [
        {"id": f"call_{i}", "name": "add", "arguments": {"a": i, "b": 1}} for i in range(turns)
    ]
    return [{"text": "", "tool_calls": [c]} for c in calls] + [{"text": "done", "tool_calls": []}]


async def add(a: int, b: int) -> int:
    return a + b


async def bare_session(script: Sequence[Response], sleep: Sleep, delay: float) -> int:
    """Run one session to its final answer; return the number of turns taken."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Add the numbers."},
    ]
    turn = 0
    while True:
        await sleep(delay)  # the scripted model "thinking"
        response = script[turn]
        turn += 1
        calls = response["tool_calls"]
        history.append({"role": "assistant", "content": response["text"], "tool_calls": calls})
        if not calls:
            return turn
        for call in calls:
            result = await add(**call["arguments"])
            history.append({"role": "tool", "tool_call_id": call["id"], "content": str(result)})
