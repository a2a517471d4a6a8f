"""`ToolCalled`, one tool call and what it returned: an event of the run and, as
`ToolOutcome`, what a `SessionStateSnapshot` keeps of each call.

In a module of its own because every reader of a snapshot (each check and sensor, a stop hook
that runs no session) needs this one kind and none of the run's other events, nor the halt
reasons `run.halted` carries (`_run`).
"""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from .._messages import ToolCall
from ._base import Event, omitted


@frozen
class ToolCalled(Event):
    """One tool call and what it returned; the session keeps these as its tool outcomes."""

    name: ClassVar[str] = "tool.called"
    level: ClassVar[str] = "debug"
    agent: str
    turn: int
    call: ToolCall
    content: str
    is_error: bool = field(metadata=omitted(False))
