"""Coding agents whose headless mode prints JSON, as models: the answer and the token usage
read from what the agent documents, instead of its raw output.

- `GeminiCliClient`: ``gemini --output-format json`` (one object: ``response``, ``stats``,
  ``error``) or ``stream-json`` (JSONL events ending in a ``result`` with ``stats``). Tokens
  are reported: see `gemini_answer`.
  https://geminicli.com/docs/cli/headless
- `CursorAgentClient`: ``cursor-agent -p --output-format json`` (one ``result`` object) or
  ``stream-json`` (JSONL events ending in the same ``result``). Cursor reports no tokens.
  https://cursor.com/docs/cli/reference/output-format
- `OpenCodeClient`: ``opencode run --format json`` (JSONL events: ``step_start``, ``text``,
  ``tool_use``, ``step_finish`` with the step's ``tokens``, ``error``; written by
  ``packages/opencode/src/cli/cmd/run.ts``). Tokens are reported: see `opencode_answer`.
  https://opencode.ai/docs/cli

Each is a `CliAgentClient` (one process per turn, its tree killed on timeout and cancel, only
the named environment passed); only the reading of the output differs. The command's stdout
and stderr arrive together, so the JSON is found among whatever else it printed. An output
with none of the documented JSON in it, or a documented error, fails the turn with a
`ModelError` quoting it.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

from attrs import evolve, frozen

from .._errors import ModelError
from .._messages import ModelRequest, ModelResponse
from .._usage import Usage
from ._agent_defaults import CURSOR_ARGV, GEMINI_ARGV, JSON_MAX_OUTPUT, OPENCODE_ARGV
from ._cli_agent import CliAgentClient


@frozen
class AgentAnswer:
    """What one turn of a JSON-printing agent said, and the tokens it reports (if any)."""

    text: str
    usage: Usage = Usage(cost_usd=None)


def json_objects(output: str) -> Iterator[dict[str, Any]]:
    """Every JSON object that starts a line of `output`, in order (one per JSONL line, or one
    pretty-printed over many); lines that are not JSON are skipped."""
    decoder = json.JSONDecoder()
    position = 0
    while position < len(output):
        start = position
        while start < len(output) and output[start] in " \t\r":
            start += 1
        if output.startswith("{", start):
            try:
                value, position = decoder.raw_decode(output, start)
            except ValueError:
                pass
            else:
                yield value  # a "{" always decodes to an object
        newline = output.find("\n", position)
        position = len(output) if newline < 0 else newline + 1


def _table(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def gemini_answer(output: str, *, name: str = "gemini") -> AgentAnswer:
    """The answer in Gemini CLI's ``json`` or ``stream-json`` output.

    Tokens: with ``json``, summed over ``stats.models.*.tokens``: input is ``prompt``,
    output is ``candidates`` plus ``thoughts``, cached is ``cached``. With ``stream-json``,
    the ``result`` event's ``stats``: ``input_tokens``, ``output_tokens``, ``cached``.
    """
    objects = list(json_objects(output))
    result = next((o for o in reversed(objects) if o.get("type") == "result"), None)
    if result is not None:
        if result.get("status") == "error":
            raise ModelError(f"{name} reported an error: {_error_text(result.get('error'))}")
        text = "".join(
            o["content"]
            for o in objects
            if o.get("type") == "message"
            and o.get("role") == "assistant"
            and isinstance(o.get("content"), str)
        )
        stats = _table(result.get("stats"))
        usage = Usage(
            _count(stats.get("input_tokens")),
            _count(stats.get("output_tokens")),
            _count(stats.get("cached")),
            cost_usd=None,
        )
        return AgentAnswer(text.strip(), usage)
    final = next((o for o in reversed(objects) if {"response", "stats", "error"} & set(o)), None)
    if final is None:
        raise ModelError(_no_json(name, "--output-format json", output), kind="malformed")
    if final.get("error") is not None and not isinstance(final.get("response"), str):
        raise ModelError(f"{name} reported an error: {_error_text(final.get('error'))}")
    response = final.get("response")
    inputs = outputs = cached = 0
    models = _table(_table(final.get("stats")).get("models"))
    for model in models.values():
        tokens = model.get("tokens") if isinstance(model, dict) else None
        if isinstance(tokens, dict):
            inputs += _count(tokens.get("prompt"))
            outputs += _count(tokens.get("candidates")) + _count(tokens.get("thoughts"))
            cached += _count(tokens.get("cached"))
    text = response.strip() if isinstance(response, str) else ""
    return AgentAnswer(text, Usage(inputs, outputs, cached, cost_usd=None))


def cursor_answer(output: str, *, name: str = "cursor-agent") -> AgentAnswer:
    """The answer in Cursor's agent ``json`` or ``stream-json`` output: the ``result`` event's
    ``result`` text. Cursor reports no token usage, so the usage is unknown (zero tokens,
    unknown cost)."""
    result = next(
        (o for o in reversed(list(json_objects(output))) if o.get("type") == "result"), None
    )
    if result is None:
        raise ModelError(_no_json(name, "-p --output-format json", output), kind="malformed")
    if result.get("is_error") is True or result.get("subtype") not in (None, "success"):
        raise ModelError(f"{name} reported an error: {str(result.get('result', ''))[:1000]}")
    text = result.get("result")
    return AgentAnswer(text.strip() if isinstance(text, str) else "")


def opencode_answer(output: str, *, name: str = "opencode") -> AgentAnswer:
    """The answer in OpenCode's ``run --format json`` events: the text of the last step.

    Tokens, summed over the ``step_finish`` events' ``part.tokens``: input is ``input`` plus
    ``cache.read`` and ``cache.write``, output is ``output`` plus ``reasoning``, cached is
    ``cache.read``. OpenCode's own ``cost`` is not taken (an estimate from its price list).
    """
    events = [o for o in json_objects(output) if isinstance(o.get("type"), str)]
    error = next((o for o in events if o["type"] == "error"), None)
    if error is not None:
        detail = error.get("error")
        if isinstance(detail, dict) and isinstance(detail.get("data"), dict):
            detail = {"type": detail.get("name"), "message": detail["data"].get("message")}
        raise ModelError(f"{name} reported an error: {_error_text(detail)}")
    finishes = [o for o in events if o["type"] == "step_finish"]
    if not finishes:
        raise ModelError(_no_json(name, "run --format json", output), kind="malformed")
    text: list[str] = []
    inputs = outputs = cached = 0
    for event in events:
        part = _table(event.get("part"))
        if event["type"] == "step_start":
            text = []
        elif event["type"] == "text" and isinstance(part.get("text"), str):
            text.append(part["text"])
        elif event["type"] == "step_finish" and isinstance(part.get("tokens"), dict):
            tokens = part["tokens"]
            cache = _table(tokens.get("cache"))
            read = _count(cache.get("read"))
            inputs += _count(tokens.get("input")) + read + _count(cache.get("write"))
            outputs += _count(tokens.get("output")) + _count(tokens.get("reasoning"))
            cached += read
    return AgentAnswer("".join(text).strip(), Usage(inputs, outputs, cached, cost_usd=None))


def _error_text(error: object) -> str:
    if isinstance(error, dict):
        kind, message = error.get("type"), error.get("message")
        return f"{kind}: {message}" if kind else str(message)
    return str(error)


def _no_json(name: str, flags: str, output: str) -> str:
    return (
        f"{name} printed none of the JSON its {flags} documents (is the flag in its argv?): "
        f"{output.strip()[-1000:]!r}"
    )


class _JsonAgentClient(CliAgentClient, ABC):
    """A `CliAgentClient` whose answer and usage are read from the agent's JSON output.

    It keeps `JSON_MAX_OUTPUT` bytes of output by default (`max_output=` changes it).
    """

    def __init__(self, argv: Sequence[str], **kwargs: Any) -> None:
        kwargs.setdefault("max_output", JSON_MAX_OUTPUT)
        super().__init__(argv, **kwargs)

    @abstractmethod
    def answer(self, output: str) -> AgentAnswer:
        """The answer and usage in the agent's JSON output (each agent prints its own shape)."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        # The JSON is parsed as the agent printed it; secrets are redacted from the answer.
        response = await self.run_turn(request)
        if response.stop_reason == "exit":
            found = self._answer(response.text)
            return evolve(response, text=self.redact(found.text), usage=found.usage)
        if response.stop_reason == "timeout":  # keep what a stream said before the cut
            try:
                found = self._answer(response.text)
            except ModelError:
                return evolve(response, text=self.redact(response.text))
            text = found.text or response.text
            return evolve(response, text=self.redact(text), usage=found.usage)
        return evolve(response, text=self.redact(response.text))

    def _answer(self, output: str) -> AgentAnswer:
        try:
            return self.answer(output)
        except ModelError as exc:
            raise ModelError(self.redact(str(exc)), kind=exc.kind) from None


class GeminiCliClient(_JsonAgentClient):
    """Gemini CLI in headless mode as the model: by default ``gemini --output-format json``
    with the prompt on stdin (a non-terminal stdin runs it headless). Pass `argv` to add
    flags (``--approval-mode auto_edit``, ``-m MODEL``); keep an ``--output-format``."""

    def __init__(self, argv: Sequence[str] = GEMINI_ARGV, **kwargs: Any) -> None:
        kwargs.setdefault("name", "gemini")
        super().__init__(argv, **kwargs)

    def answer(self, output: str) -> AgentAnswer:
        return gemini_answer(output, name=self.name)

    def __repr__(self) -> str:
        return f"GeminiCliClient({list(self.argv)!r}, prompt={self.prompt_mode!r})"


class CursorAgentClient(_JsonAgentClient):
    """Cursor's agent in print mode as the model: by default ``cursor-agent -p
    --output-format json PROMPT`` (the prompt as the last argument). Pass `argv` to add flags
    (``--force`` to let it run commands, ``-m MODEL``); keep ``-p --output-format``."""

    def __init__(self, argv: Sequence[str] = CURSOR_ARGV, **kwargs: Any) -> None:
        kwargs.setdefault("name", "cursor-agent")
        kwargs.setdefault("prompt", "argument")
        super().__init__(argv, **kwargs)

    def answer(self, output: str) -> AgentAnswer:
        return cursor_answer(output, name=self.name)

    def __repr__(self) -> str:
        return f"CursorAgentClient({list(self.argv)!r}, prompt={self.prompt_mode!r})"


class OpenCodeClient(_JsonAgentClient):
    """OpenCode as the model: by default ``opencode run --format json PROMPT`` (the prompt as
    the last argument). Pass `argv` to add flags (``-m PROVIDER/MODEL``); keep
    ``--format json``."""

    def __init__(self, argv: Sequence[str] = OPENCODE_ARGV, **kwargs: Any) -> None:
        kwargs.setdefault("name", "opencode")
        kwargs.setdefault("prompt", "argument")
        super().__init__(argv, **kwargs)

    def answer(self, output: str) -> AgentAnswer:
        return opencode_answer(output, name=self.name)

    def __repr__(self) -> str:
        return f"OpenCodeClient({list(self.argv)!r}, prompt={self.prompt_mode!r})"
