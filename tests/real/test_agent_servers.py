"""The scripted provider servers (`tests/real/_agent_servers.py`), and each real coding agent
(Claude Code, Codex, Gemini CLI, Qwen Code at the versions pinned in tests/agents) run against
them once: one prompt, the scripted answer printed, the prompt in the request the server got.

The real-binary tests skip, naming the install command, when the binaries are absent.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from _agent_servers import (
    AGENTS,
    AgentServer,
    agent_server,
    agent_version,
    call,
    limit,
    run_agent,
    say,
)


def _post(
    server: AgentServer, path: str, body: dict[str, Any]
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        server.url + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def _events(raw: bytes) -> list[Any]:
    data = [line[6:] for line in raw.decode().splitlines() if line.startswith("data: ")]
    return [json.loads(d) for d in data if d != "[DONE]"]


def test_each_dialect_streams_the_scripted_text_and_records_the_request() -> None:
    with agent_server(say("one"), say("two"), say("three"), say("four")) as server:
        _, _, anthropic = _post(server, "/v1/messages", {"stream": True, "messages": []})
        _, _, responses = _post(server, "/v1/responses", {"input": "x"})
        _, _, chat = _post(server, "/v1/chat/completions", {"stream": True, "messages": []})
        _, _, gemini = _post(
            server, "/v1beta/models/m:streamGenerateContent?alt=sse", {"contents": []}
        )
        assert len(server.turns) == 4
    deltas = [e["delta"].get("text") for e in _events(anthropic) if "delta" in e]
    assert "one" in deltas
    done = [e for e in _events(responses) if e["type"] == "response.output_item.done"]
    assert done[0]["item"]["content"][0]["text"] == "two"
    assert _events(chat)[0]["choices"][0]["delta"]["content"] == "three"
    assert _events(gemini)[0]["candidates"][0]["content"]["parts"] == [{"text": "four"}]


def test_a_tool_call_is_written_in_each_dialect() -> None:
    with agent_server(*[call("write", {"path": "a"}) for _ in range(3)]) as server:
        _, _, anthropic = _post(server, "/v1/messages", {"messages": []})
        _, _, chat = _post(server, "/v1/chat/completions", {"messages": []})
        _, _, gemini = _post(server, "/v1beta/models/m:generateContent", {"contents": []})
    message = json.loads(anthropic)
    assert message["stop_reason"] == "tool_use"
    assert message["content"][0]["input"] == {"path": "a"}
    assert json.loads(chat)["choices"][0]["finish_reason"] == "tool_calls"
    part = json.loads(gemini)["candidates"][0]["content"]["parts"][0]
    assert part == {"functionCall": {"name": "write", "args": {"path": "a"}}}


def test_side_requests_take_no_scripted_answer_and_saw_reads_model_turns() -> None:
    with agent_server(say("kept")) as server:
        status, _, _ = _post(server, "/v1/messages/count_tokens", {"messages": []})
        assert status == 200
        _post(server, "/v1/messages", {"max_tokens": 1, "messages": []})  # Claude's probe
        _, _, body = _post(
            server, "/v1/messages", {"messages": [{"role": "user", "content": "the reason"}]}
        )
        assert json.loads(body)["content"][0]["text"] == "kept"
        assert server.saw("the reason")
        assert not server.saw("absent")
        status, _, body = _post(server, "/v1/messages", {"messages": []})
    assert status == 400
    assert b"no scripted answer left" in body


def test_quota_answers_are_each_providers_own() -> None:
    with agent_server(
        limit(60, window="seven_day"),
        limit(120),
        limit(terminal=True),
        limit(retry_delay="12.5s", terminal=True),
    ) as server:
        status, headers, body = _post(server, "/v1/messages", {"messages": []})
        assert status == 429
        assert headers["anthropic-ratelimit-unified-status"] == "rejected"
        assert headers["anthropic-ratelimit-unified-representative-claim"] == "seven_day"
        assert json.loads(body)["error"]["type"] == "rate_limit_error"
        status, _, body = _post(server, "/v1/responses", {})
        error = json.loads(body)["error"]
        assert (status, error["type"], error["resets_in_seconds"]) == (
            429,
            "usage_limit_reached",
            120,
        )
        status, _, body = _post(server, "/v1/chat/completions", {})
        assert json.loads(body)["error"]["code"] == "insufficient_quota"
        status, _, body = _post(server, "/v1beta/models/m:generateContent", {})
    error = json.loads(body)["error"]
    assert error["status"] == "RESOURCE_EXHAUSTED"
    assert "Please retry in 12.5s" in error["message"]
    assert "PerDay" in json.dumps(error["details"])


@pytest.mark.parametrize("agent", AGENTS)
def test_the_real_agent_prints_the_scripted_answer(agent: str, tmp_path: Path) -> None:
    with agent_server(say("PONG-4711")) as server:
        run = run_agent(agent, server, tmp_path / "home", "Answer with the magic word.")
        assert run.exit_code == 0, f"{agent} {agent_version(agent)}: {run.output[-2000:]}"
        assert "PONG-4711" in run.stdout, run.output[-2000:]
        assert server.saw("Answer with the magic word."), server.requests
        assert not server.answers  # exactly one model turn took the answer
