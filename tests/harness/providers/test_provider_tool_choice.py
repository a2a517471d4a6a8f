"""`tool_choice` on the OpenAI-compatible client: llama-cpp-python's function-calling chat
format ignores the tools unless it is sent. It goes with every request that offers tools,
never with one that offers none (OpenAI refuses that), from Python and from a spec."""

from __future__ import annotations

import re
from typing import Any

import pytest
from _provider_server import FakeProvider, Reply, openai_body, openai_client

from harness import ConfigurationError, Message, OpenAIClient, model_from_config
from harness.extend import ModelRequest, ToolSpec

pytestmark = pytest.mark.anyio

SPEC = ToolSpec("write", "Write a file.", {"type": "object", "properties": {}})


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")


def _request(*tools: ToolSpec) -> ModelRequest:
    return ModelRequest([Message.user("hi")], tools)


@pytest.mark.parametrize(
    "choice", ["required", "auto", {"type": "function", "function": {"name": "write"}}]
)
async def test_tool_choice_goes_with_requests_that_offer_tools(
    provider: FakeProvider, choice: Any
) -> None:
    provider.script(Reply(openai_body("ok")), Reply(openai_body("ok")))
    client = openai_client(provider, tool_choice=choice)
    await client.complete(_request(SPEC))
    await client.complete(_request())
    with_tools, without = (r.body for r in provider.requests)
    assert with_tools["tool_choice"] == choice
    assert "tool_choice" not in without
    assert "tools" not in without


async def test_without_tool_choice_nothing_is_sent(provider: FakeProvider) -> None:
    provider.script(Reply(openai_body("ok")))
    await openai_client(provider).complete(_request(SPEC))
    assert "tool_choice" not in provider.requests[0].body


async def test_a_spec_model_table_sends_it(provider: FakeProvider) -> None:
    provider.script(Reply(openai_body("ok")))
    table = {
        "type": "openai",
        "model": "local",
        "base_url": provider.url + "/v1",
        "api_key_env": False,
        "tool_choice": "required",
    }
    await model_from_config(table).complete(_request(SPEC))
    assert provider.requests[0].body["tool_choice"] == "required"


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ("always", "'tool_choice' must be 'auto', 'required', 'none' or"),
        ({"type": "function"}, "'tool_choice' must be 'auto', 'required', 'none' or"),
    ],
)
def test_a_bad_tool_choice_is_refused(choice: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        OpenAIClient("m", api_key_env=None, tool_choice=choice)


def test_a_bad_tool_choice_in_a_spec_names_the_key() -> None:
    table = {"type": "openai", "model": "m", "api_key_env": False, "tool_choice": "always"}
    with pytest.raises(ConfigurationError, match=re.escape("model.tool_choice")):
        model_from_config(table)
