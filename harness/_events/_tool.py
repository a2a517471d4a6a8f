"""`ToolCalled`, one tool call and what it returned: an event of the run and, as
`ToolOutcome`, what a `SessionStateSnapshot` keeps of each call.

In a module of its own because a session keeps these for its snapshots, and needs none of the
run's other events, nor the halt reasons `run.halted` carries (`_run`), to make them; a reader
of a snapshot names the class only in annotations (a stop hook, which runs no session, loads
no event at all).
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


ToolOutcome = ToolCalled
"""What one tool call returned, as the session keeps it: the ``tool.called`` event itself
(`turn`, `call`, `content`, `is_error`, and when and by which agent), so a call is recorded
once for the snapshot and the event stream alike."""
