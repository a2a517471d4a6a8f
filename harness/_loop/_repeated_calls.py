"""The note on a tool call identical to one that just failed.

A weak model often sends the same failing call again right after its error, as if it had
not read it. The call is still run (the workspace may have changed meanwhile), but its result
says that it repeats the failed one and quotes that error's first line, so the next turn has
the error in front of it once more.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from .._messages import ToolCall
from .._tools._base import ToolResult


def _key(call: ToolCall) -> str:
    """The call's identity: its tool and its arguments, whatever their order or the call's id."""
    try:
        arguments = json.dumps(call.arguments, sort_keys=True, default=repr)
    except (TypeError, ValueError):  # keys that are not strings: compare their text
        arguments = repr(sorted(call.arguments.items(), key=repr))
    return f"{call.name}\0{arguments}"


def first_line(text: str) -> str:
    """The first line of an error, cut to a length worth repeating."""
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= 300 else line[:300] + " [...]"


class RecentFailures:
    """The failed calls of the latest turn that ran tools, by identity, with their errors'
    first lines; `note` rewrites the result of a call that repeats one of them."""

    def __init__(self) -> None:
        self._failed: dict[str, str] = {}

    def __bool__(self) -> bool:
        """Whether a failed call is remembered."""
        return bool(self._failed)

    def note(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """`result`, with a note first when `call` repeats a call that just failed."""
        if not self._failed:
            return result
        earlier = self._failed.get(_key(call))
        if earlier is None:
            return result
        if result.is_error:
            note = (
                "note: this call is identical to your previous one, which failed with:\n"
                f"  {earlier}\n"
                "It was run again and failed again. Repeating a failed call unchanged will "
                "not help: read the error and change the call (read the file first if it "
                "is about a file's content)."
            )
        else:
            note = (
                "note: this call is identical to your previous one, which failed with:\n"
                f"  {earlier}\n"
                "It was run again and succeeded this time."
            )
        return ToolResult(f"{note}\n\n{result.content}", result.is_error)

    def remember(self, calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> None:
        """Keep this turn's failed calls (and forget the turn before's)."""
        self._failed = {
            _key(call): first_line(result.content)
            for call, result in zip(calls, results, strict=True)
            if result.is_error
        }
