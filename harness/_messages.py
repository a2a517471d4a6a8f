"""Messages, tool calls, and the request/response a model client exchanges (a call's usage is
`_usage`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from attrs import field, frozen

from ._usage import ZERO_USAGE, Usage

Role = Literal["system", "user", "assistant", "tool"]

FEEDBACK_TAG = "harness-feedback"


_TAG = re.compile(rf"<\s*/?\s*{FEEDBACK_TAG}", re.IGNORECASE)


def neutralize(text: str) -> str:
    """Defuse any feedback tag in untrusted text, so only the harness can inject feedback.

    Closing tags are defused too: otherwise a check's reason quoting agent-controlled text could
    end its feedback block early and leave words outside it that read as the user's.
    """
    # Every tag starts with "<": most text has none and is returned without a lowered copy.
    if "<" not in text or FEEDBACK_TAG not in text.lower():
        return text
    return _TAG.sub(lambda m: "&lt;" + m.group(0)[1:], text)


@frozen
class ToolCall:
    """One tool invocation the model asked for."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": dict(self.arguments)}


@frozen
class Message:
    """One entry of a conversation.

    Harness feedback (a completion check's reason, a sensor warning, a provider's guidance) is
    text wrapped in a ``<harness-feedback>`` tag, either a ``user`` message of its own or
    appended to the tool result of the call that triggered it; `feedback_source` names who
    sent it. Tool output can never forge the tag (see `neutralize`).
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    feedback_source: str | None = None

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", text)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", neutralize(text))

    @classmethod
    def assistant(cls, text: str = "", tool_calls: Sequence[ToolCall] = ()) -> Message:
        return cls("assistant", text, tuple(tool_calls))

    @classmethod
    def tool_result(cls, call: ToolCall, content: str, *, is_error: bool = False) -> Message:
        return cls("tool", neutralize(content), (), call.id, call.name, is_error)

    @classmethod
    def feedback(cls, source: str, text: str) -> Message:
        body = neutralize(text)
        return cls(
            "user",
            f'<{FEEDBACK_TAG} source="{source}">\n{body}\n</{FEEDBACK_TAG}>',
            feedback_source=source,
        )

    @property
    def is_feedback(self) -> bool:
        return self.feedback_source is not None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            data["name"] = self.name
        if self.is_error:
            data["is_error"] = True
        if self.feedback_source is not None:
            data["feedback_source"] = self.feedback_source
        return data


NOT_EXECUTED = "not_executed"
"""The `ModelResponse.stop_reason` of a turn that did no work (a command-line agent that only
printed an error, or nothing): it is neither a claim of done nor progress, and the next turn
is told so."""


@frozen
class ToolSpec:
    """What the model is told about a tool: its name, description and JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@frozen
class ModelRequest:
    """What a model client is asked: the conversation so far and the tools on offer.

    `messages` is a read-only view of the live transcript, not a copy; a client that keeps it
    beyond the call must copy it. `deadline` is when the run (or the session) must end, on the
    harness's clock, so a client's retries stop in time; `workspace` is the folder the run
    works in (a command-line agent runs there). Neither is part of `digest`.
    """

    messages: Sequence[Message]
    tools: tuple[ToolSpec, ...] = ()
    agent: str = "agent"
    turn: int = 1
    deadline: float | None = None
    workspace: Path | None = None

    @property
    def system(self) -> str:
        return "\n\n".join(m.content for m in self.messages if m.role == "system")

    def digest(self) -> str:
        """A stable hash of the request's content: messages and tool names."""
        import hashlib  # loaded by the first digest: only a recording asks for one

        payload = {
            "messages": [m.to_dict() for m in self.messages],
            "tools": [t.name for t in self.tools],
        }
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        # A lone surrogate (a non-UTF-8 file name in a tool result) hashes as its code point.
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@frozen
class ModelResponse:
    """One assistant turn: text and/or tool calls, with the usage it cost."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = ZERO_USAGE
    model: str | None = None
    stop_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"text": self.text}
        if self.tool_calls:
            data["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        data["usage"] = self.usage.to_dict()
        if self.model is not None:
            data["model"] = self.model
        if self.stop_reason is not None:
            data["stop_reason"] = self.stop_reason
        return data
