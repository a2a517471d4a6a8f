"""`AnthropicClient`: the Messages API through the official ``anthropic`` SDK.

System messages go into the ``system`` parameter. Tool results become ``tool_result`` blocks
of a user message, consecutive messages of the same role are merged (the API wants the roles
to alternate), and an assistant turn that said nothing at all is left out. Usage maps fresh
input, cache reads and cache writes together to input tokens, cache reads to cached tokens,
and prices each part at its own rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from .._clock import Clock
from .._errors import ConfigurationError
from .._fs._jsonl import without_surrogates
from .._messages import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec
from .._usage import Usage
from ._base import ProviderClient
from ._pricing import ModelPrice, PriceTable
from ._responses import malformed
from ._retry import RetryPolicy


class AnthropicClient(ProviderClient):
    """A `ModelClient` for Anthropic's Messages API.

    `max_tokens` caps each reply (the API requires it). `options` are extra fields of the
    request body, sent as they are (``temperature``, ``metadata``, ...).
    """

    provider = "anthropic"
    sdk_module = "anthropic"
    extra = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        max_tokens: int = 8192,
        base_url: str | None = None,
        api_key_env: str | None = "ANTHROPIC_API_KEY",
        price: ModelPrice | None = None,
        prices: PriceTable | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 600.0,
        options: Mapping[str, Any] | None = None,
        clock: Clock | None = None,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ConfigurationError(f"'max_tokens' must be a positive int (got {max_tokens!r})")
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
        self.max_tokens = max_tokens

    def _make(self, sdk: ModuleType, key: str) -> Any:
        return sdk.AsyncAnthropic(
            api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout
        )

    async def _send(self, client: Any, request: ModelRequest) -> Any:
        kwargs: dict[str, Any] = {"extra_body": dict(self.options)} if self.options else {}
        if request.system:
            kwargs["system"] = without_surrogates(request.system)
        if request.tools:
            kwargs["tools"] = tools_to_anthropic(request.tools)
        return await client.messages.with_raw_response.create(
            model=self.model,
            max_tokens=self.max_tokens,
            messages=without_surrogates(messages_to_anthropic(request.messages)),
            **kwargs,
        )

    def _parse(self, body: Any) -> ModelResponse:
        return parse_anthropic(body, self)


def messages_to_anthropic(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation (without system messages) as alternating Messages-API turns."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        blocks = _blocks(m)
        if not blocks:
            continue
        role = "assistant" if m.role == "assistant" else "user"
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _blocks(m: Message) -> list[dict[str, Any]]:
    if m.role == "tool":
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": m.tool_call_id,
            "content": m.content,
        }
        if m.is_error:
            block["is_error"] = True
        return [block]
    blocks: list[dict[str, Any]] = []
    if m.content:
        blocks.append({"type": "text", "text": m.content})
    for call in m.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.arguments)}
        )
    return blocks


def tools_to_anthropic(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
        for t in tools
    ]


def parse_anthropic(body: Any, client: ProviderClient) -> ModelResponse:
    """A Messages-API body as a `ModelResponse`; a `malformed` `ModelError` otherwise."""
    provider = client.provider
    if not isinstance(body, dict):
        raise malformed(provider, f"expected a JSON object (got {type(body).__name__})")
    content = body.get("content")
    if not isinstance(content, list):
        raise malformed(provider, "'content' must be a list of blocks")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for i, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            if not isinstance(block.get("text"), str):
                raise malformed(provider, f"content[{i}].text must be text")
            texts.append(block["text"])
        elif kind == "tool_use":
            call_id, name, arguments = block.get("id"), block.get("name"), block.get("input")
            if not (isinstance(call_id, str) and isinstance(name, str) and name):
                raise malformed(provider, f"content[{i}] (tool_use) needs an 'id' and a 'name'")
            if not isinstance(arguments, dict):
                raise malformed(provider, f"content[{i}].input must be an object")
            calls.append(ToolCall(call_id, name, arguments))
        elif not isinstance(kind, str):
            raise malformed(provider, f"content[{i}] has no 'type'")
    model = body.get("model")
    stop = body.get("stop_reason")
    return ModelResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=_parse_usage(body.get("usage"), client),
        model=model if isinstance(model, str) and model else client.model,
        stop_reason=stop if isinstance(stop, str) else None,
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _parse_usage(raw: object, client: ProviderClient) -> Usage:
    if not isinstance(raw, dict):
        return Usage(cost_usd=None)
    fresh = _count(raw.get("input_tokens"))
    read = _count(raw.get("cache_read_input_tokens"))
    written = _count(raw.get("cache_creation_input_tokens"))
    output = _count(raw.get("output_tokens"))
    cost = client.cost(fresh_input=fresh, output=output, cache_read=read, cache_write=written)
    return Usage(fresh + read + written, output, read, cost)
