"""Compaction: keep a long session inside the model's context window.

Before each model call a session with a `Compaction` measures its conversation as the
context-pressure sensor does (the larger of the latest call's input tokens and the
characters divided by `chars_per_token`). At `at` of the window (the sensor's warning level by
default) it compacts everything older than the last `keep_turns` assistant turns:

- ``"drop_tool_outputs"``: each old tool result's text becomes a short note saying what was
  dropped (the tool, and how many characters);
- ``"summarize"``: the old turns are sent to the model with a request to summarise them, and
  replaced by one message carrying the summary, tagged as harness feedback from
  ``compaction``.

The system prompt and the task (every message before the first assistant turn) are never
compacted. Each compaction is a `ContextCompacted` event. It depends only on the conversation
and the usage the model reported, so a replay of a recorded run compacts at the same turns and
sends the same requests.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal, get_args

from attrs import field, frozen

from .._errors import ConfigurationError
from .._messages import Message, ModelRequest
from .._validate import check_positive

CompactionMethod = Literal["drop_tool_outputs", "summarize"]
METHODS: tuple[str, ...] = get_args(CompactionMethod)
DROPPED_PREFIX = "[tool output dropped to save context:"
SUMMARY_SOURCE = "compaction"
SUMMARY_INSTRUCTIONS = (
    "You compress the earlier part of an agent's working session so the agent can go on "
    "without it. Write a concise summary of what was done and learned: files read or changed "
    "and how, commands run and their results, errors met, decisions taken and what remains to "
    "do. Keep exact names, paths and numbers. Answer with the summary only."
)
_SHOWN_PER_MESSAGE = 2_000  # characters of each old message the summariser is shown


def _method(instance: object, attribute: object, value: object) -> None:
    if value not in METHODS:
        raise ConfigurationError(f"'compaction' must be one of {list(METHODS)} (got {value!r})")


def _fraction(instance: object, attribute: object, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise ConfigurationError(f"compaction: 'at' must be a fraction in (0, 1) (got {value!r})")


@frozen
class Compaction:
    """How and when a session compacts its conversation (see the module docstring)."""

    method: CompactionMethod = field(validator=_method)
    at: float = field(default=0.75, validator=_fraction)
    keep_turns: int = 2
    chars_per_token: float = 4.0

    def __attrs_post_init__(self) -> None:
        check_positive("keep_turns", self.keep_turns, integer=True, owner="compaction")
        check_positive("chars_per_token", self.chars_per_token, owner="compaction")

    def size(self, messages: Sequence[Message], latest_input: int) -> int:
        """The conversation's size in tokens, as the context-pressure sensor measures it."""
        chars = sum(len(m.content) for m in messages)
        return max(latest_input, int(chars / self.chars_per_token))

    def due(self, messages: Sequence[Message], latest_input: int, window: int) -> bool:
        return self.size(messages, latest_input) >= self.at * window

    def span(self, messages: Sequence[Message]) -> tuple[int, int]:
        """The slice of `messages` that may be compacted: from the first assistant turn to
        the start of the last `keep_turns` ones (empty when there is nothing older)."""
        turns = [i for i, m in enumerate(messages) if m.role == "assistant"]
        if len(turns) <= self.keep_turns:
            return 0, 0
        return turns[0], turns[-self.keep_turns]


def as_compaction(value: Compaction | str | None) -> Compaction | None:
    """`value` as a `Compaction`: a method name gets the defaults; None stays None."""
    if value is None or isinstance(value, Compaction):
        return value
    if isinstance(value, str):
        return Compaction(value)  # type: ignore[arg-type]  # the validator names a bad one
    raise ConfigurationError(
        f"'compaction' must be a Compaction or one of {list(METHODS)} (got {value!r})"
    )


def drop_tool_outputs(messages: list[Message], start: int, end: int) -> list[str]:
    """Replace the text of each tool result in ``messages[start:end]`` that is not yet a
    note with one; the ids of the calls whose output was replaced."""
    dropped: list[str] = []
    for index in range(start, end):
        message = messages[index]
        if message.role != "tool" or message.content.startswith(DROPPED_PREFIX):
            continue
        note = (
            f"{DROPPED_PREFIX} {len(message.content):,} characters of {message.name or 'tool'} "
            "output (and any feedback that came with it) were removed; run the tool again if "
            "you need them]"
        )
        messages[index] = Message(
            "tool", note, (), message.tool_call_id, message.name, message.is_error
        )
        dropped.append(message.tool_call_id or "")
    return dropped


def summary_request(
    messages: Sequence[Message], start: int, end: int, *, agent: str, turn: int
) -> ModelRequest:
    """The request that asks the model to summarise ``messages[start:end]`` (no tools)."""
    lines: list[str] = []
    for message in messages[start:end]:
        text = message.content
        if len(text) > _SHOWN_PER_MESSAGE:
            text = f"{text[:_SHOWN_PER_MESSAGE]} [... {len(text) - _SHOWN_PER_MESSAGE:,} chars]"
        label = message.role if message.name is None else f"{message.role} ({message.name})"
        lines.append(f"## {label}\n{text}")
        for call in message.tool_calls:
            arguments = json.dumps(dict(call.arguments), ensure_ascii=False, default=str)
            lines.append(f"(called {call.name} with {arguments})")
    body = "The earlier part of the session, oldest first:\n\n" + "\n\n".join(lines)
    return ModelRequest(
        messages=(Message.system(SUMMARY_INSTRUCTIONS), Message.user(body)),
        agent=agent,
        turn=turn,
    )


def summary_message(text: str) -> Message:
    """The tagged message that replaces the summarised turns."""
    return Message.feedback(
        SUMMARY_SOURCE,
        "The earlier turns of this session were removed to save context. Their summary:\n"
        + text.strip(),
    )
