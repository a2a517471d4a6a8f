"""Scripted provider servers on 127.0.0.1 for the real coding agents (the real-binary tier).

One `AgentServer` speaks every dialect the agents use, chosen by the request's path:

- Anthropic Messages, ``POST /v1/messages`` (SSE when the body asks ``stream``): Claude Code;
- OpenAI Responses, ``POST .../responses`` (SSE): Codex;
- OpenAI chat completions, ``POST .../chat/completions`` (SSE when ``stream``): Qwen Code,
  OpenCode;
- the Gemini API, ``POST .../models/M:generateContent`` and ``:streamGenerateContent``
  (SSE with ``alt=sse``): Gemini CLI.

A test scripts the model's answers in the order the agent will ask for them, dialect-free
(`say`, `call`, `limit`), and the server writes each in the dialect of the request that takes
it. Requests that are not a model turn (token counts, model lists, telemetry) get a neutral
answer and take no scripted answer. Every request is kept (`requests`, `turns`), so a test can
assert what reached the model: `AgentServer.saw(text)`.

A `Limited` answer is the provider's own out-of-quota reply: status 429 with the body and
headers each provider sends (Anthropic's unified rate-limit headers, Codex's
``usage_limit_reached``, OpenAI's ``insufficient_quota``, Gemini's ``RESOURCE_EXHAUSTED`` with
its ``QuotaFailure`` and ``RetryInfo``), so the agent prints its real message.

Built on `_provider_server`'s `Received`; the agents' launch (`run_agent`, a temporary HOME,
the provider settings each agent reads) is here too, so every real-binary test starts them
the same way. Binaries come from ``npm ci --prefix tests/agents --no-audit --no-fund``;
`agent_binary` skips a test with that command when one is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from _provider_server import Received
from attrs import field, frozen

AGENTS_DIR = Path(__file__).parents[1] / "agents"
BIN = AGENTS_DIR / "node_modules" / ".bin"
INSTALL = "npm ci --prefix tests/agents --no-audit --no-fund"
MODEL_REPLY_TIMEOUT = 30.0


# ---------------------------------------------------------------------------- the script


@frozen
class ToolCall:
    """A tool call the model makes: `name` and its JSON `arguments`."""

    name: str
    arguments: Mapping[str, Any] = field(factory=dict)
    id: str = "call_1"


@frozen
class Say:
    """One model turn: `text`, then `calls` (none: the turn ends)."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()


@frozen
class Limited:
    """The provider's out-of-quota answer (status 429).

    `resets_in`: seconds until the window resets (None: not said); `terminal`: the quota is
    gone, not a window (Gemini's per-day quota, OpenAI's ``insufficient_quota``, Anthropic's
    credit balance); `window`: Anthropic's unified limit that was hit (``five_hour``,
    ``seven_day``, ``seven_day_opus``, ``seven_day_sonnet``).
    """

    resets_in: float | None = 3600.0
    terminal: bool = False
    window: str = "five_hour"
    retry_delay: str | None = None
    """Gemini's ``RetryInfo.retryDelay`` (``"12.5s"``); default: from `resets_in`."""
    retry_after: float | None = None
    """The ``retry-after`` header in seconds; default: `resets_in`. Agents that retry a 429
    themselves (Qwen Code, seven times) wait this long between tries."""


Answer = Say | Limited


def say(text: str, *calls: ToolCall) -> Say:
    return Say(text, tuple(calls))


def call(name: str, arguments: Mapping[str, Any] | None = None, id: str = "call_1") -> Say:
    return Say("", (ToolCall(name, dict(arguments or {}), id),))


def limit(
    resets_in: float | None = 3600.0,
    *,
    terminal: bool = False,
    window: str = "five_hour",
    retry_delay: str | None = None,
    retry_after: float | None = None,
) -> Limited:
    return Limited(resets_in, terminal, window, retry_delay, retry_after)


# ---------------------------------------------------------------------------- dialects


def dialect(path: str) -> str | None:
    """Which provider API a request path belongs to, or None when it is not a model turn."""
    route = urlsplit(path).path
    if route.endswith("/messages") and "/v1/" in route:
        return "anthropic"
    if route.endswith("/responses"):
        return "responses"
    if route.endswith("/chat/completions"):
        return "chat"
    if route.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini"
    return None


@frozen
class Wire:
    """What the server writes: status, content type, body, extra headers."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(factory=dict)


def _sse(events: Sequence[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


def _json(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Wire:
    return Wire(status, json.dumps(body).encode(), headers=dict(headers or {}))


def render(answer: Answer, kind: str, body: Mapping[str, Any], path: str) -> Wire:
    """`answer` written as provider `kind` answers the request `body` at `path`."""
    stream = bool(body.get("stream")) or kind == "responses"
    if kind == "gemini":
        stream = path.split("?")[0].endswith(":streamGenerateContent")
    model = str(body.get("model") or "scripted-model")
    if isinstance(answer, Limited):
        return _limited(answer, kind)
    if kind == "anthropic":
        return _anthropic(answer, model, stream)
    if kind == "responses":
        return _responses(answer, model)
    if kind == "chat":
        return _chat(answer, model, stream)
    return _gemini(answer, model, stream)


def _anthropic(answer: Say, model: str, stream: bool) -> Wire:
    blocks: list[dict[str, Any]] = []
    if answer.text or not answer.calls:
        blocks.append({"type": "text", "text": answer.text})
    for c in answer.calls:
        blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})
    stop = "tool_use" if answer.calls else "end_turn"
    usage = {"input_tokens": 10, "output_tokens": 5}
    message = {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": model,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not stream:
        return _json(200, {**message, "content": blocks})
    events: list[tuple[str | None, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {**message, "content": [], "stop_reason": None, "usage": usage},
            },
        )
    ]
    for index, block in enumerate(blocks):
        start: dict[str, Any]
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return Wire(200, _sse(events), "text/event-stream")


def _responses(answer: Say, model: str) -> Wire:
    items: list[dict[str, Any]] = []
    if answer.text or not answer.calls:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_scripted",
                "status": "completed",
                "content": [{"type": "output_text", "text": answer.text, "annotations": []}],
            }
        )
    for c in answer.calls:
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{c.id}",
                "call_id": c.id,
                "name": c.name,
                "arguments": json.dumps(c.arguments),
                "status": "completed",
            }
        )
    response = {"id": "resp_scripted", "object": "response", "model": model, "status": "completed"}
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "response": response})
    ]
    for index, item in enumerate(items):
        events.append(
            (
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress"},
                },
            )
        )
        if item["type"] == "message":
            events.append(
                (
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": answer.text,
                    },
                )
            )
        events.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": index, "item": item},
            )
        )
    events.append(
        (
            "response.completed",
            {
                "type": "response.completed",
                "response": {**response, "output": items, "usage": usage},
            },
        )
    )
    return Wire(200, _sse(events), "text/event-stream")


def _chat(answer: Say, model: str, stream: bool) -> Wire:
    finish = "tool_calls" if answer.calls else "stop"
    calls = [
        {
            "index": i,
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
        }
        for i, c in enumerate(answer.calls)
    ]
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    base = {"id": "chatcmpl-scripted", "created": int(time.time()), "model": model}
    message: dict[str, Any] = {"role": "assistant", "content": answer.text}
    if calls:
        message["tool_calls"] = calls
    if not stream:
        return _json(
            200,
            {
                **base,
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            },
        )
    chunk = {**base, "object": "chat.completion.chunk"}
    events: list[tuple[str | None, Any]] = [
        (None, {**chunk, "choices": [{"index": 0, "delta": message, "finish_reason": None}]}),
        (
            None,
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        ),
        (None, {**chunk, "choices": [], "usage": usage}),
        (None, "[DONE]"),
    ]
    return Wire(200, _sse(events), "text/event-stream")


def _gemini(answer: Say, model: str, stream: bool) -> Wire:
    parts: list[dict[str, Any]] = []
    if answer.text or not answer.calls:
        parts.append({"text": answer.text})
    parts += [{"functionCall": {"name": c.name, "args": c.arguments}} for c in answer.calls]
    body = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": model,
    }
    if not stream:
        return _json(200, body)
    return Wire(200, _sse([(None, body)]), "text/event-stream")


def _limited(answer: Limited, kind: str) -> Wire:
    now = time.time()
    reset = None if answer.resets_in is None else now + answer.resets_in
    after = answer.retry_after if answer.retry_after is not None else answer.resets_in
    retry_after = {} if after is None else {"retry-after": f"{after:.0f}"}
    if kind == "anthropic":
        if answer.terminal:
            message = "Your credit balance is too low to access the Anthropic API."
            return _json(
                400,
                {"type": "error", "error": {"type": "invalid_request_error", "message": message}},
            )
        headers = {
            "anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-representative-claim": answer.window,
            f"anthropic-ratelimit-unified-{answer.window.replace('_', '-')}-status": "rejected",
            **retry_after,
        }
        if reset is not None:
            headers["anthropic-ratelimit-unified-reset"] = f"{reset:.0f}"
            headers[f"anthropic-ratelimit-unified-{answer.window.replace('_', '-')}-reset"] = (
                f"{reset:.0f}"
            )
        body = {
            "type": "error",
            "error": {"type": "rate_limit_error", "message": "Rate limit exceeded"},
        }
        return _json(429, body, headers)
    if kind == "responses":
        if answer.terminal:
            return _json(429, _openai_quota())
        error: dict[str, Any] = {
            "type": "usage_limit_reached",
            "message": "The usage limit has been reached",
            "plan_type": "plus",
        }
        if reset is not None:
            error["resets_at"] = int(reset)
            error["resets_in_seconds"] = int(answer.resets_in or 0)
        return _json(429, {"error": error}, retry_after)
    if kind == "chat":
        if answer.terminal:
            return _json(429, _openai_quota(), retry_after)
        wait = "later" if answer.resets_in is None else f"in {answer.resets_in:g}s"
        message = (
            "Rate limit reached for qwen3-coder in organization org-scripted on requests per "
            f"min (RPM): Limit 3, Used 3, Requested 1. Please try again {wait}."
        )
        return _json(
            429,
            {"error": {"message": message, "type": "requests", "code": "rate_limit_exceeded"}},
            retry_after,
        )
    delay = answer.retry_delay or (None if answer.resets_in is None else f"{answer.resets_in:g}s")
    quota = (
        "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
        if answer.terminal
        else "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
    )
    metric = "generate_content_free_tier_requests"
    message = (
        f"You exceeded your current quota, please check your plan and billing details. "
        f"* Quota exceeded for metric: generativelanguage.googleapis.com/{metric}, limit: 50"
    )
    details: list[dict[str, Any]] = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {"quotaMetric": f"generativelanguage.googleapis.com/{metric}", "quotaId": quota}
            ],
        }
    ]
    if delay is not None:
        message += f"\nPlease retry in {delay}."
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay})
    return _json(
        429,
        {
            "error": {
                "code": 429,
                "message": message,
                "status": "RESOURCE_EXHAUSTED",
                "details": details,
            }
        },
    )


def _openai_quota() -> dict[str, Any]:
    message = (
        "You exceeded your current quota, please check your plan and billing details. For "
        "more information on this error, read the docs: "
        "https://platform.openai.com/docs/guides/error-codes/api-errors."
    )
    return {
        "error": {
            "message": message,
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }


def _side_answer(method: str, path: str) -> Wire:
    """What a request that is not a model turn gets."""
    route = urlsplit(path).path
    if route.endswith("/count_tokens"):
        return _json(200, {"input_tokens": 10})
    if route.endswith(":countTokens"):
        return _json(200, {"totalTokens": 10})
    if method == "GET" and route.rstrip("/").endswith("/models"):
        return _json(200, {"object": "list", "data": [], "models": []})
    return _json(404, {"error": {"message": f"not scripted: {method} {route}"}})


# ---------------------------------------------------------------------------- the server


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, depth first (what a request said, without the JSON)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """An agent that hangs up mid-retry is not an error of the test."""


class AgentServer:
    """The scripted provider: `script` answers, point an agent at `url`, read `requests`.

    `answers` are taken by model turns in order; when none is left a turn gets `fallback`
    (by default an error, so a test that scripted too few answers sees it). Side requests
    (count_tokens, model lists) never take an answer.
    """

    def __init__(self, *, fallback: Answer | None = None) -> None:
        self.answers: deque[Answer] = deque()
        self.requests: list[Received] = []
        self.fallback = fallback
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("content-length", 0) or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {"raw": raw.decode("utf-8", "replace")}
                headers = {k.lower(): v for k, v in self.headers.items()}
                wire = server._answer(method, self.path, headers, body)
                self.send_response_only(wire.status)
                self.send_header("date", self.date_time_string())
                self.send_header("content-type", wire.content_type)
                self.send_header("content-length", str(len(wire.body)))
                for key, value in wire.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(wire.body)

            def do_POST(self) -> None:
                self._serve("POST")

            def do_GET(self) -> None:
                self._serve("GET")

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    def _answer(self, method: str, path: str, headers: dict[str, str], body: Any) -> Wire:
        kind = dialect(path) if method == "POST" and isinstance(body, dict) else None
        with self._lock:
            self.requests.append(Received(path, headers, body))
            if kind is None:
                return _side_answer(method, path)
            if _is_side_turn(kind, body):
                return render(Say("OK"), kind, body, path)
            answer = self.answers.popleft() if self.answers else self.fallback
        if answer is None:
            error = {"error": {"message": "no scripted answer left", "type": "invalid_request"}}
            return _json(400, error)
        return render(answer, kind, body, path)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *answers: Answer) -> None:
        with self._lock:
            self.answers.extend(answers)

    @property
    def turns(self) -> list[Received]:
        """The requests that were model turns (not side requests), in order."""
        return [
            r
            for r in list(self.requests)
            if dialect(r.path) is not None
            and isinstance(r.body, dict)
            and not _is_side_turn(dialect(r.path) or "", r.body)
        ]

    def saw(self, text: str, *, after: int = 0) -> bool:
        """Whether `text` is in any string of a model turn from the `after`-th on."""
        return any(text in s for r in self.turns[after:] for s in strings(r.body))

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def _is_side_turn(kind: str, body: Mapping[str, Any]) -> bool:
    """A model request an agent makes for itself, not the task: Claude Code's one-token quota
    probe and its title/topic requests on the small model; Gemini CLI's routing and
    next-speaker checks (JSON-schema requests)."""
    if kind == "anthropic":
        if body.get("max_tokens") == 1:
            return True
        tools = body.get("tools")
        system = " ".join(strings(body.get("system")))
        return not tools and ("title" in system.lower() or "topic" in system.lower())
    if kind == "gemini":
        config = body.get("generationConfig")
        return isinstance(config, dict) and "responseJsonSchema" in config
    return False


@contextmanager
def agent_server(*answers: Answer, fallback: Answer | None = None) -> Iterator[AgentServer]:
    server = AgentServer(fallback=fallback)
    server.script(*answers)
    server.start()
    try:
        yield server
    finally:
        server.close()


# ---------------------------------------------------------------------------- the agents


AGENTS = ("claude", "codex", "gemini", "qwen")


def agent_binary(name: str) -> Path:
    """The installed binary of agent `name`; skips the test (naming the install) without it.

    Claude Code's ``bin/claude.exe`` is a shell placeholder its install script replaces with
    the native binary; installed without scripts, the native binary of its platform package
    is run instead."""
    path = BIN / name
    if name == "claude":
        native = sorted(AGENTS_DIR.glob("node_modules/@anthropic-ai/claude-code-*/claude"))
        path = native[0] if native else path
    if not path.exists():
        pytest.skip(f"{name} is not installed: run `{INSTALL}`")
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH: the real coding agents need it")
    return path


def agent_version(name: str) -> str:
    """The pinned version of agent `name` in tests/agents/package-lock.json."""
    package = {
        "claude": "@anthropic-ai/claude-code",
        "codex": "@openai/codex",
        "gemini": "@google/gemini-cli",
        "qwen": "@qwen-code/qwen-code",
        "opencode": "opencode-ai",
        "copilot": "@github/copilot",
    }[name]
    lock = json.loads((AGENTS_DIR / "package-lock.json").read_text(encoding="utf-8"))
    return str(lock["packages"][f"node_modules/{package}"]["version"])


def agent_home(
    home: Path, name: str, server: AgentServer, *, subscriber: bool = False
) -> dict[str, str]:
    """Prepare `home` for agent `name` against `server`; the environment to run it with.

    Only PATH (with node), HOME, LANG, TZ and the agent's provider settings: no key or setting
    of the machine's user reaches the agent. `subscriber` (Claude Code only) logs it in as a
    Max subscriber (an OAuth token in HOME instead of an API key): only then does it print its
    subscription limits (``You've hit your session limit · resets ...``) and emit
    ``rate_limit_event`` lines.
    """
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "NO_COLOR": "1",
        "CI": "1",
    }
    url = server.url
    if name == "claude":
        env.update(
            ANTHROPIC_BASE_URL=url,
            ANTHROPIC_API_KEY="sk-ant-scripted",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_TELEMETRY="1",
            DISABLE_ERROR_REPORTING="1",
        )
        (home / ".claude.json").write_text(
            json.dumps({"hasCompletedOnboarding": True, "bypassPermissionsModeAccepted": True}),
            encoding="utf-8",
        )
        if subscriber:
            del env["ANTHROPIC_API_KEY"]
            (home / ".claude").mkdir(exist_ok=True)
            oauth = {
                "accessToken": "sk-ant-oat01-scripted",
                "refreshToken": "sk-ant-ort01-scripted",
                "expiresAt": int((time.time() + 86400) * 1000),
                "scopes": ["user:inference", "user:profile"],
                "subscriptionType": "max",
                "rateLimitTier": "default_claude_max_20x",
            }
            (home / ".claude" / ".credentials.json").write_text(
                json.dumps({"claudeAiOauth": oauth}), encoding="utf-8"
            )
    elif name == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir(exist_ok=True)
        (codex_home / "config.toml").write_text(
            'model = "gpt-5.5"\n'
            'model_provider = "scripted"\n'
            "[model_providers.scripted]\n"
            'name = "scripted"\n'
            f'base_url = "{url}/v1"\n'
            'wire_api = "responses"\n'
            'env_key = "SCRIPTED_API_KEY"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n",
            encoding="utf-8",
        )
        env.update(CODEX_HOME=str(codex_home), SCRIPTED_API_KEY="sk-scripted")
    elif name == "gemini":
        gemini_home = home / ".gemini"
        gemini_home.mkdir(exist_ok=True)
        (gemini_home / "settings.json").write_text(
            json.dumps(
                {
                    "security": {"auth": {"selectedType": "gemini-api-key"}},
                    "model": {"name": "gemini-2.5-flash"},
                    "general": {"disableAutoUpdate": True},
                    "privacy": {"usageStatisticsEnabled": False},
                    "telemetry": {"enabled": False},
                }
            ),
            encoding="utf-8",
        )
        env.update(
            GEMINI_API_KEY="scripted-key",
            GOOGLE_GEMINI_BASE_URL=url,
            GEMINI_CLI_TRUST_WORKSPACE="true",
        )
    elif name == "qwen":
        qwen_home = home / ".qwen"
        qwen_home.mkdir(exist_ok=True)
        (qwen_home / "settings.json").write_text(
            json.dumps(
                {
                    "security": {"auth": {"selectedType": "openai"}},
                    "memory": {"enableManagedAutoMemory": False},
                    "privacy": {"usageStatisticsEnabled": False},
                    "telemetry": {"enabled": False},
                }
            ),
            encoding="utf-8",
        )
        env.update(
            OPENAI_API_KEY="sk-scripted", OPENAI_BASE_URL=f"{url}/v1", OPENAI_MODEL="qwen3-coder"
        )
    elif name == "copilot":  # GitHub Copilot CLI's own provider settings (BYOK), offline
        env.update(
            COPILOT_OFFLINE="1",
            COPILOT_PROVIDER_TYPE="openai",
            COPILOT_PROVIDER_BASE_URL=f"{url}/v1",
            COPILOT_PROVIDER_API_KEY="sk-scripted",
            COPILOT_MODEL="gpt-5",
        )
    else:
        raise ValueError(f"unknown agent {name!r}")
    return env


def agent_argv(name: str, prompt: str | None = None) -> list[str]:
    """The headless command line of agent `name` (the prompt appended when given)."""
    argv = {
        "claude": [
            str(agent_binary("claude")),
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
        ],
        "codex": [str(BIN / "codex"), "exec", "--skip-git-repo-check", "--json"],
        "gemini": [str(BIN / "gemini"), "--output-format", "json"],
        "qwen": [str(BIN / "qwen"), "--output-format", "json"],
        "copilot": [str(BIN / "copilot"), "--allow-all-tools", "--trust-folder"],
    }[name]
    if prompt is not None:
        argv += ["-p", prompt] if name in ("gemini", "qwen", "copilot") else [prompt]
    return argv


@frozen
class AgentRun:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_agent(
    name: str,
    server: AgentServer,
    home: Path,
    prompt: str,
    *,
    cwd: Path | None = None,
    argv: Sequence[str] | None = None,
    timeout: float = 120.0,
    subscriber: bool = False,
) -> AgentRun:
    """Run agent `name` once, headless, against `server` with HOME at `home`."""
    agent_binary(name)
    env = agent_home(home, name, server, subscriber=subscriber)
    workdir = cwd or home / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    command = list(argv) if argv is not None else agent_argv(name, prompt)
    done = subprocess.run(
        command,
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return AgentRun(done.returncode, done.stdout, done.stderr)
