"""One adapter per agent with a stop hook: its documented payload in, its documented answer out.

Every adapter feeds the same `verify_stop` (`_core`); only the payload's field names,
the re-entry flag and the answer's shape differ. An adapter never reads a field its agent does
not document, and a payload that lacks a required one is a `HookPayloadError` (exit 1: a
non-blocking error to every one of these agents).

An adapter holds no state, only its agent's constants as class attributes: it is no attrs
value, whose class creation would cost each stop six classes' generated methods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Protocol

from ._claude_transcript import TranscriptError, last_answer
from ._core import HookPayloadError, StopDecision, StopRequest


class StopAdapter(Protocol):
    """An agent's stop hook: `parse` its payload, `answer` a decision (None prints nothing)."""

    @property
    def agent(self) -> str: ...

    @property
    def subcommand(self) -> str: ...

    def parse(self, data: object) -> StopRequest: ...

    def answer(self, decision: StopDecision) -> dict[str, object] | None: ...


# Claude Code hooks reference, "Stop and SubagentStop":
# https://code.claude.com/docs/en/hooks
class ClaudeStop:
    """Claude Code's ``Stop``/``SubagentStop`` hook.

    Payload: ``session_id``, ``cwd``, ``hook_event_name``, ``stop_hook_active``,
    ``last_assistant_message``, and the transcript: ``transcript_path`` for a Stop,
    ``agent_transcript_path`` (the subagent's own) for a SubagentStop. Answer:
    ``{"decision": "block", "reason": ...}``, or nothing to allow the stop.
    """

    agent: ClassVar[str] = "claude"
    subcommand: ClassVar[str] = "claude-stop"
    events: ClassVar[tuple[str, ...]] = ("Stop", "SubagentStop")

    def parse(self, data: object) -> StopRequest:
        payload = _object(data)
        event = payload.get("hook_event_name", "Stop")
        if event not in self.events:
            raise HookPayloadError(
                f"'hook_event_name' must be one of {self.events} (got {event!r})"
            )
        field = "transcript_path" if event == "Stop" else "agent_transcript_path"
        transcript = _path(payload, field)
        last = _optional_text(payload, "last_assistant_message")
        return StopRequest(
            agent=self.agent,
            session_id=_string(payload, "session_id"),
            subagent=None if event == "Stop" else _subagent(payload, transcript),
            cwd=_path(payload, "cwd"),
            reentry=_flag(payload, "stop_hook_active"),
            last_message=last if last is not None else _final_text(transcript, field),
        )

    def answer(self, decision: StopDecision) -> dict[str, object] | None:
        return decision.answer()


# Codex hooks, "Stop" (hooks.json; input and output):
# https://developers.openai.com/codex/hooks
class CodexStop:
    """Codex's ``Stop`` hook.

    Payload: ``session_id``, ``turn_id``, ``cwd``, ``hook_event_name`` (``"Stop"``),
    ``stop_hook_active``, ``last_assistant_message`` (may be null), ``transcript_path``,
    ``model``, ``permission_mode``. Codex's transcript is its own rollout format, so the
    final answer is ``last_assistant_message`` only. Answer: ``{"decision": "block",
    "reason": ...}`` (the reason is Codex's continuation prompt), or nothing to allow it.
    """

    agent: ClassVar[str] = "codex"
    subcommand: ClassVar[str] = "codex-stop"

    def parse(self, data: object) -> StopRequest:
        return _stop_with_last_message(self.agent, data)

    def answer(self, decision: StopDecision) -> dict[str, object] | None:
        return decision.answer()


# Gemini CLI hooks reference, "AfterAgent" (input fields, `decision`/`reason` output):
# https://geminicli.com/docs/hooks/reference
class GeminiAfterAgent:
    """Gemini CLI's ``AfterAgent`` hook.

    Payload: ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``
    (``"AfterAgent"``), ``timestamp``, ``prompt``, ``prompt_response`` (the agent's final
    text) and ``stop_hook_active`` (true inside a retry sequence). Answer: ``{"decision":
    "deny", "reason": ...}``, which rejects the response and sends the reason to the agent as
    a new prompt; ``{}`` (stdout must hold only JSON) lets it finish.
    """

    agent: ClassVar[str] = "gemini"
    subcommand: ClassVar[str] = "gemini-stop"

    def parse(self, data: object) -> StopRequest:
        payload = _object(data)
        event = payload.get("hook_event_name", "AfterAgent")
        if event != "AfterAgent":
            raise HookPayloadError(f"'hook_event_name' must be 'AfterAgent' (got {event!r})")
        return StopRequest(
            agent=self.agent,
            session_id=_string(payload, "session_id"),
            cwd=_path(payload, "cwd"),
            reentry=_flag(payload, "stop_hook_active"),
            last_message=_optional_text(payload, "prompt_response"),
        )

    def answer(self, decision: StopDecision) -> dict[str, object] | None:
        if not decision.block:
            return {}
        return {"decision": "deny", "reason": decision.reason}


# Cursor hooks, "stop" (hooks.json `loop_limit`; input `status`, `loop_count`; output
# `followup_message`): https://cursor.com/docs/agent/hooks
class CursorStop:
    """Cursor's ``stop`` hook.

    Payload: the common ``conversation_id``, ``generation_id``, ``hook_event_name``
    (``"stop"``), ``workspace_roots`` (the first is the workspace), plus ``status``
    (``"completed"``, ``"aborted"`` or ``"error"``) and ``loop_count`` (how many follow-ups
    this hook already sent; above zero is re-entry). Cursor sends no final answer. A loop
    that was aborted or failed is not checked: the person stopped it, or the agent could not
    go on. Answer: ``{"followup_message": ...}``, which Cursor submits as the next user
    message, or ``{}`` to let it stop; Cursor's own ``loop_limit`` caps the follow-ups too.
    """

    agent: ClassVar[str] = "cursor"
    subcommand: ClassVar[str] = "cursor-stop"
    statuses: ClassVar[tuple[str, ...]] = ("completed", "aborted", "error")

    def parse(self, data: object) -> StopRequest:
        payload = _object(data)
        event = payload.get("hook_event_name", "stop")
        if event != "stop":
            raise HookPayloadError(f"'hook_event_name' must be 'stop' (got {event!r})")
        status = payload.get("status")
        if status not in self.statuses:
            raise HookPayloadError(f"'status' must be one of {self.statuses} (got {status!r})")
        loops = payload.get("loop_count", 0)
        if isinstance(loops, bool) or not isinstance(loops, int) or loops < 0:
            raise HookPayloadError(f"'loop_count' must be a whole number >= 0 (got {loops!r})")
        roots = payload.get("workspace_roots", [])
        if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
            raise HookPayloadError(f"'workspace_roots' must be a list of paths (got {roots!r})")
        return StopRequest(
            agent=self.agent,
            session_id=_string(payload, "conversation_id"),
            cwd=Path(roots[0]).expanduser() if roots and roots[0] else None,
            reentry=loops > 0,
            allow=None if status == "completed" else f"the agent loop ended {status}: not checked",
        )

    def answer(self, decision: StopDecision) -> dict[str, object] | None:
        if not decision.block:
            return {}
        return {"followup_message": decision.reason}


# Qwen Code's hook runner (packages/core/src/hooks: `fireStopEvent`, read in the 0.15.10 bundle)
class QwenStop:
    """Qwen Code's ``Stop`` hook (Claude Code's shape, run with ``bash -c``).

    Payload: ``session_id``, ``transcript_path`` (Qwen's own format, not read), ``cwd``,
    ``hook_event_name`` (``"Stop"``), ``timestamp``, ``stop_hook_active`` and
    ``last_assistant_message``. Answer: ``{"decision": "block", "reason": ...}``, or nothing.
    """

    agent: ClassVar[str] = "qwen"
    subcommand: ClassVar[str] = "qwen-stop"

    def parse(self, data: object) -> StopRequest:
        return _stop_with_last_message(self.agent, data)

    def answer(self, decision: StopDecision) -> dict[str, object] | None:
        return decision.answer()


# GitHub Copilot CLI's agent-stop hook: the 1.0.102 SDK's `AgentStopHookInput`/`Output`, and
# the payload the 1.0.102 binary really sends a command hook (fixtures/hooks).
class CopilotStop:
    """GitHub Copilot CLI's ``agentStop`` hook.

    Payload (as Copilot CLI 1.0.102 sends it): ``sessionId``, ``timestamp``, ``cwd``,
    ``transcriptPath``, ``stopReason`` and ``stop_hook_active`` (true on a re-entry after a
    block); its SDK's names (``workingDirectory``, ``stopHookActive``) are read too. Copilot
    sends no final answer. Answer: ``{"decision": "block", "reason": ...}``
    (the reason is enqueued as the next user message), or nothing to let it stop.
    """

    agent: ClassVar[str] = "copilot"
    subcommand: ClassVar[str] = "copilot-stop"

    def parse(self, data: object) -> StopRequest:
        payload = _object(data)
        session = "sessionId" if "sessionId" in payload else "session_id"
        cwd = "cwd" if "cwd" in payload else "workingDirectory"
        active = "stopHookActive" if "stopHookActive" in payload else "stop_hook_active"
        return StopRequest(
            agent=self.agent,
            session_id=_string(payload, session),
            cwd=_path(payload, cwd),
            reentry=_flag(payload, active),
            last_message=_optional_text(payload, "last_assistant_message"),
        )

    def answer(self, decision: StopDecision) -> dict[str, object] | None:
        return decision.answer()


ADAPTERS: dict[str, StopAdapter] = {
    a.agent: a
    for a in (
        ClaudeStop(),
        CodexStop(),
        GeminiAfterAgent(),
        CursorStop(),
        QwenStop(),
        CopilotStop(),
    )
}


def _final_text(transcript: Path | None, field: str) -> str | None:
    """Claude Code's last answer in its transcript (when the payload carries none); a
    transcript named but unreadable is a `HookPayloadError`, never an empty answer."""
    if transcript is None:
        return None
    try:
        return last_answer(transcript)
    except TranscriptError as exc:
        raise HookPayloadError(f"{field}: {exc}") from None


def _subagent(payload: dict[str, Any], transcript: Path | None) -> str:
    """Which of the session's subagents is stopping: its ``agent_id``, else (an agent that
    sends none) its own transcript, else all of the session's subagents together."""
    agent = payload.get("agent_id")
    if agent is None:
        return f"transcript:{transcript}" if transcript is not None else "subagent"
    if not isinstance(agent, str) or not agent:
        raise HookPayloadError(f"'agent_id' must be a non-empty string (got {agent!r})")
    return f"agent:{agent}"


def _object(data: object) -> dict[str, Any]:
    if data is None:  # an empty stdin reads as null: the agent sent nothing
        raise HookPayloadError(
            "the payload on stdin is empty: the agent sends a JSON object when it stops "
            "(this command is meant to be run by the agent, as its hook)"
        )
    if not isinstance(data, dict):
        kind = {list: "an array", str: "a string", bool: "true or false"}.get(
            type(data), "a number"
        )
        raise HookPayloadError(f"the payload must be a JSON object (got {kind})")
    return data


def _string(payload: dict[str, Any], key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str) or not value:
        raise HookPayloadError(f"{key!r} must be a non-empty string (got {value!r})")
    return value


def _flag(payload: dict[str, Any], key: str) -> bool:
    value = payload.get(key, False)
    if not isinstance(value, bool):
        raise HookPayloadError(f"{key!r} must be true or false (got {value!r})")
    return value


def _optional_text(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) else None


def _path(payload: dict[str, Any], key: str) -> Path | None:
    """The payload's path `key` with ``~`` expanded; None if it is missing or empty."""
    value = payload.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise HookPayloadError(f"{key!r} must be a path (got {value!r})")
    return Path(value).expanduser()


def _stop_with_last_message(agent: str, data: object) -> StopRequest:
    """A ``Stop`` payload that carries the final answer as ``last_assistant_message`` (Codex's
    and Qwen Code's, whose transcripts are formats of their own)."""
    payload = _object(data)
    event = payload.get("hook_event_name", "Stop")
    if event != "Stop":
        raise HookPayloadError(f"'hook_event_name' must be 'Stop' (got {event!r})")
    return StopRequest(
        agent=agent,
        session_id=_string(payload, "session_id"),
        cwd=_path(payload, "cwd"),
        reentry=_flag(payload, "stop_hook_active"),
        last_message=_optional_text(payload, "last_assistant_message"),
    )
