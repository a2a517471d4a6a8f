"""`OpenAIClient`: chat completions on OpenAI or any compatible server (vLLM, Ollama,
llama.cpp's server, a proxy), through the official ``openai`` SDK.

Messages map one to one: system, user, assistant (with ``tool_calls`` whose arguments are
JSON text) and ``tool`` results. Arguments are read as leniently as JSON allows without
guessing (raw control characters inside strings are taken as they are); a tool call whose
arguments are still not a JSON object is refused with the parser's own reason and position
(`harness._tools._raw_arguments`), so the model learns what went wrong instead of the run
failing. Usage maps ``prompt_tokens`` (which include cached
tokens) to input, ``completion_tokens`` to output and ``prompt_tokens_details.cached_tokens``
to cached.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from .._clock import Clock
from .._errors import ConfigurationError
from .._fs._jsonl import without_surrogates
from .._messages import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec
from .._tools._raw_arguments import read_arguments
from .._usage import Usage
from ._base import ProviderClient
from ._pricing import ModelPrice, PriceTable
from ._responses import malformed
from ._retry import RetryPolicy


class OpenAIClient(ProviderClient):
    """A `ModelClient` for OpenAI-compatible chat completions.

    `base_url` points at any compatible server (``http://localhost:11434/v1`` for Ollama);
    `api_key_env` names the environment variable holding the key, or None for a server that
    needs none. `options` are extra fields of the request body, sent as they are
    (``temperature``, ``max_tokens``, a server's own settings, ...). `price` overrides the
    price table for this model. `tool_choice` (``"auto"``, ``"required"``, ``"none"``, or
    ``{"type": "function", "function": {"name": ...}}``) is sent with every request that
    offers tools: llama-cpp-python's function-calling chat format ignores the tools unless
    it is sent.
    """

    provider = "openai"
    sdk_module = "openai"
    extra = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        price: ModelPrice | None = None,
        prices: PriceTable | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 600.0,
        options: Mapping[str, Any] | None = None,
        clock: Clock | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
    ) -> None:
        if tool_choice is not None and not _valid_tool_choice(tool_choice):
            raise ConfigurationError(
                "'tool_choice' must be 'auto', 'required', 'none' or "
                "{'type': 'function', 'function': {'name': ...}} "
                f"(got {tool_choice!r})"
            )
        self.tool_choice = tool_choice
        super().__init__(
            model,
            base_url=base_url,
            api_key_env=api_key_env,
            price=price,
            prices=prices,
            retry=retry,
            timeout=timeout,
            options=options,
            clock=clock,
        )

    def for_attempt(self, attempt: int) -> OpenAIClient:
        """This client for best-of attempt `attempt` (`harness.extend.ForksAttempts`): the
        same, its requests carrying ``seed`` = the configured seed (0 when none) + `attempt`,
        so attempts sample apart on a server that honours a seed (OpenAI, Ollama,
        llama.cpp), each the same way every time."""
        forked = copy.copy(self)
        seed = self.options.get("seed", 0)
        base = seed if isinstance(seed, int) and not isinstance(seed, bool) else 0
        forked.options = {**self.options, "seed": base + attempt}
        return forked

    def _make(self, sdk: ModuleType, key: str) -> Any:
        return sdk.AsyncOpenAI(
            api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout
        )

    async def _send(self, client: Any, request: ModelRequest) -> Any:
        kwargs: dict[str, Any] = {"extra_body": dict(self.options)} if self.options else {}
        if request.tools:
            kwargs["tools"] = tools_to_openai(request.tools)
            if self.tool_choice is not None:
                kwargs["tool_choice"] = self.tool_choice
        return await client.chat.completions.with_raw_response.create(
            model=self.model,
            messages=without_surrogates(messages_to_openai(request.messages)),
            **kwargs,
        )

    def _parse(self, body: Any) -> ModelResponse:
        return parse_openai(body, self)


def _valid_tool_choice(value: object) -> bool:
    if isinstance(value, str):
        return value in ("auto", "required", "none")
    if isinstance(value, Mapping):
        function = value.get("function")
        return (
            value.get("type") == "function"
            and isinstance(function, Mapping)
            and isinstance(function.get("name"), str)
        )
    return False


def messages_to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The harness's messages as chat-completions messages."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            # Content is always a string, "" when the turn only called tools: OpenAI accepts
            # null or no content there, but llama.cpp's server answers 500 to null and to a
            # missing field, and every compatible server takes "".
            entry: dict[str, Any] = {"role": "assistant", "content": m.content}
            if m.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
                    }
                    for c in m.tool_calls
                ]
            out.append(entry)
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def tools_to_openai(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            },
        }
        for t in tools
    ]


def parse_openai(body: Any, client: ProviderClient) -> ModelResponse:
    """A chat-completions body as a `ModelResponse`; a `malformed` `ModelError` otherwise."""
    provider = client.provider
    if not isinstance(body, dict):
        raise malformed(provider, f"expected a JSON object (got {type(body).__name__})")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise malformed(provider, "'choices' is missing or empty")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise malformed(provider, "'choices[0].message' is missing")
    text = message.get("content")
    if text is None:
        refusal = message.get("refusal")
        text = refusal if isinstance(refusal, str) else ""
    if not isinstance(text, str):
        raise malformed(provider, f"'message.content' must be text (got {type(text).__name__})")
    calls = _parse_calls(message.get("tool_calls"), provider)
    model = body.get("model")
    finish = choices[0].get("finish_reason")
    return ModelResponse(
        text=text,
        tool_calls=calls,
        usage=_parse_usage(body.get("usage"), client),
        model=model if isinstance(model, str) and model else client.model,
        stop_reason=finish if isinstance(finish, str) else None,
    )


def _parse_calls(raw: object, provider: str) -> tuple[ToolCall, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise malformed(provider, "'message.tool_calls' must be a list")
    calls = []
    for i, item in enumerate(raw):
        function = item.get("function") if isinstance(item, dict) else None
        call_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(call_id, str):
            raise malformed(provider, f"tool_calls[{i}] needs an 'id' and a 'function'")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise malformed(provider, f"tool_calls[{i}].function.name is missing")
        calls.append(ToolCall(call_id, name, read_arguments(function.get("arguments"))))
    return tuple(calls)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _parse_usage(raw: object, client: ProviderClient) -> Usage:
    if not isinstance(raw, dict):
        # No usage reported: the tokens are unknown, so the cost is too (never zero).
        return Usage(cost_usd=None)
    prompt = _count(raw.get("prompt_tokens"))
    output = _count(raw.get("completion_tokens"))
    details = raw.get("prompt_tokens_details")
    cached = written = 0
    if isinstance(details, dict):
        cached = min(_count(details.get("cached_tokens")), prompt)
        written = min(_count(details.get("cache_write_tokens")), prompt - cached)
    cost = client.cost(
        fresh_input=prompt - cached - written,
        output=output,
        cache_read=cached,
        cache_write=written,
    )
    return Usage(prompt, output, cached, cost)
