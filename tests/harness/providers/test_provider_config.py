"""`model_from_config`: spec tables become model clients, and every mistake names its key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import (
    AnthropicClient,
    CliAgentClient,
    ConfigurationError,
    ModelPrice,
    OpenAIClient,
    ScriptedModelClient,
    model_from_config,
)


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-config-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-config-test")


def test_a_fixture_table_loads_the_script_relative_to_the_spec(tmp_path: Path) -> None:
    """type = fixture reads the JSONL file next to the spec."""
    (tmp_path / "run.jsonl").write_text('{"text": "done"}\n')
    client = model_from_config({"type": "fixture", "path": "run.jsonl"}, base=tmp_path)
    assert isinstance(client, ScriptedModelClient)
    assert client.remaining == 1


def test_an_openai_table_sets_every_option() -> None:
    """base_url, key variable, timeout, price, retry and options all reach the client."""
    client = model_from_config(
        {
            "type": "openai",
            "model": "qwen2.5-coder",
            "base_url": "http://127.0.0.1:8000/v1",
            "api_key_env": False,
            "timeout": 30,
            "price": {"input": 0, "output": 0},
            "retry": {"max_attempts": 2},
            "options": {"temperature": 0.1},
        }
    )
    assert isinstance(client, OpenAIClient)
    assert (client.model, client.base_url, client.api_key_env) == (
        "qwen2.5-coder",
        "http://127.0.0.1:8000/v1",
        None,
    )
    assert client.timeout == 30.0
    assert client.price == ModelPrice(0, 0)
    assert client.retry.max_attempts == 2
    assert client.options == {"temperature": 0.1}


def test_an_anthropic_table_builds_the_anthropic_client() -> None:
    """type = anthropic takes max_tokens and prices from the default table."""
    client = model_from_config({"type": "anthropic", "model": "claude-haiku-4-5", "max_tokens": 99})
    assert isinstance(client, AnthropicClient)
    assert client.max_tokens == 99
    assert client.prices_known


def test_a_cli_agent_table_builds_the_command_line_client(tmp_path: Path) -> None:
    """type = cli_agent takes argv, prompt mode, timeout, env and a cwd relative to the spec."""
    client = model_from_config(
        {
            "type": "cli_agent",
            "argv": ["claude", "-p", "{prompt}"],
            "prompt": "argument",
            "timeout": 60,
            "pass_env": ["ANTHROPIC_API_KEY"],
            "env": {"NO_COLOR": "1"},
            "cwd": "work",
        },
        base=tmp_path,
    )
    assert isinstance(client, CliAgentClient)
    assert client.command("hi") == ["claude", "-p", "hi"]
    assert client.cwd == tmp_path / "work"
    assert client.pass_env == ("ANTHROPIC_API_KEY",)
    assert client.env == {"NO_COLOR": "1"}
    assert client.timeout == 60.0


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"type": "gpt"}, r"spec: model\.type must be one of 'fixture', 'openai'"),
        ({"model": "x"}, r"spec: model\.type must be one of"),
        ({"type": "openai"}, r"spec: model\.model is required"),
        (
            {"type": "openai", "model": "x", "temp": 1},
            r"spec: model: unknown key 'temp' for an openai model \(valid keys: api_key_env",
        ),
        ({"type": "openai", "model": "x", "api_key_env": 3}, r"spec: model\.api_key_env must"),
        ({"type": "openai", "model": "x", "timeout": -1}, r"spec: model\.timeout must be"),
        ({"type": "openai", "model": "x", "price": {"input": 1}}, r"model\.price\.output"),
        (
            {"type": "openai", "model": "x", "retry": {"tries": 1}},
            r"model\.retry: unknown key 'tries'",
        ),
        ({"type": "openai", "model": "x", "options": []}, r"spec: model\.options must be a table"),
        ({"type": "anthropic", "model": "x", "max_tokens": 0}, r"spec: model: 'max_tokens'"),
        ({"type": "fixture"}, r"spec: model\.path is required"),
        ({"type": "fixture", "path": "missing.jsonl"}, r"missing\.jsonl"),
        (
            {"type": "cli_agent", "argv": "claude -p"},
            r"spec: model\.argv must be an array of strings",
        ),
        (
            {"type": "cli_agent", "argv": ["a"], "prompt": "file"},
            r"spec: model\.prompt must be one of 'stdin', 'argument' \(got 'file'\)",
        ),
        ({"type": "cli_agent", "argv": ["a"], "pass_env": "K"}, r"spec: model\.pass_env"),
        ({"type": "cli_agent", "argv": ["a"], "env": {"A": 1}}, r"spec: model\.env\.A"),
        (
            {"type": "openai", "model": "x", "api_key_env": "NOPE_NOT_SET"},
            r"spec: model: the environment variable NOPE_NOT_SET",
        ),
    ],
)
def test_mistakes_name_the_table_and_key(
    table: dict[str, Any], message: str, tmp_path: Path
) -> None:
    """Every bad table is a ConfigurationError that says where it is."""
    with pytest.raises(ConfigurationError, match=message):
        model_from_config(table, where="spec: model", base=tmp_path)
