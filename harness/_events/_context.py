"""The event of a session that compacted its context to stay inside the model's window."""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from .._usage import Usage
from ._base import Event, omitted


@frozen
class ContextCompacted(Event):
    """The session neared the model's context window and compacted its older turns:
    `method` is ``drop_tool_outputs`` or ``summarize``, `messages` how many were replaced,
    `tool_calls` the ids of the calls whose outputs are gone from the conversation,
    `tokens_before` the size that set it off, `chars_before`/`chars_after` the conversation's
    characters either side. `summary` is the model's summary and `usage` what its call cost
    (accounted to the run like any call); both are empty for dropped outputs."""

    name: ClassVar[str] = "context.compacted"
    agent: str
    turn: int
    method: str
    messages: int
    tool_calls: tuple[str, ...]
    tokens_before: int
    chars_before: int
    chars_after: int
    summary: str | None
    usage: Usage = field(metadata=omitted(Usage()))
