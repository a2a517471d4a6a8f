"""A scripted HTTP server on 127.0.0.1 that stands in for a model provider in tests.

It answers each POST with the next scripted `Reply` (a JSON body, raw bytes, a status, extra
headers, or no answer at all until the server closes) and keeps every request it received,
with the connection it came on. It runs in a thread, so the real SDK clients reach it over a
real socket on either backend. Like real providers it keeps connections open (HTTP/1.1), and
like llama.cpp's server it refuses a chat-completions message whose content is null or
missing, with a 500.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from attrs import field, frozen

from harness import AnthropicClient, OpenAIClient, RetryPolicy
from harness.testing import FakeClock

# Three attempts, waits of exactly 1 s then 2 s: tests read the waits off a FakeClock.
RETRY = RetryPolicy(max_attempts=3, initial_wait=1.0, jitter=0.0)


@frozen
class Reply:
    """One scripted answer; `hold` means never answer (a hung provider)."""

    body: Any = field(factory=dict)
    status: int = 200
    headers: Mapping[str, str] = field(factory=dict)
    hold: bool = False


@frozen
class Received:
    """One request the server got; `connection` is the client's port (one per connection)."""

    path: str
    headers: Mapping[str, str]
    body: Any
    connection: int = 0


def llama_cpp_refusal(body: Any) -> dict[str, Any] | None:
    """The 500 body llama.cpp's server answers a chat request with null or missing content."""
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else []:
        if "content" not in message:
            text = "Expected 'content' (ref: https://github.com/ggml-org/llama.cpp/issues/8367)"
        elif message["content"] is None:
            text = (
                "Failed to parse messages: [json.exception.type_error.302] type must be "
                f"string, but is null; messages = {json.dumps(messages, indent=2)}"
            )
        else:
            continue
        return {"error": {"code": 500, "message": text, "type": "server_error"}}
    return None


class FakeProvider:
    """The server: `script` the replies, point a client at `url`, read `requests` after."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Received] = []
        self.released = threading.Event()
        self.closed_connections: set[int] = set()
        self._closing = threading.Condition()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # answer at once, as real servers do

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                body = json.loads(raw or b"{}")
                port = self.client_address[1]
                provider.requests.append(Received(self.path, headers, body, port))
                refusal = (
                    llama_cpp_refusal(body) if self.path.endswith("/chat/completions") else None
                )
                if refusal is not None:
                    reply = Reply(refusal, status=500)
                elif provider.replies:
                    reply = provider.replies.popleft()
                else:
                    reply = Reply({"error": {"message": "no scripted reply left"}}, status=418)
                if reply.hold:
                    provider.released.wait(30)
                    return
                data = (
                    reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                )
                self.send_response_only(reply.status)
                if "date" not in {k.lower() for k in reply.headers}:
                    self.send_header("date", self.date_time_string())
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def finish(self) -> None:
                super().finish()
                with provider._closing:
                    provider.closed_connections.add(self.client_address[1])
                    provider._closing.notify_all()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    @property
    def connections(self) -> list[int]:
        """The connections requests came on, in order of first use."""
        return list(dict.fromkeys(r.connection for r in self.requests))

    def wait_closed(self, connection: int, timeout: float = 5.0) -> bool:
        """Block until the client has closed `connection` (False after `timeout` seconds)."""
        with self._closing:
            return self._closing.wait_for(lambda: connection in self.closed_connections, timeout)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


@contextmanager
def fake_provider() -> Iterator[FakeProvider]:
    server = FakeProvider()
    server.start()
    try:
        yield server
    finally:
        server.close()


def openai_client(
    provider: FakeProvider, clock: FakeClock | None = None, **kwargs: Any
) -> OpenAIClient:
    """An `OpenAIClient` for "gpt-4o" pointed at `provider`, retrying by `RETRY`."""
    kwargs.setdefault("retry", RETRY)
    return OpenAIClient(
        "gpt-4o", base_url=provider.url + "/v1", clock=clock or FakeClock(), **kwargs
    )


def anthropic_client(
    provider: FakeProvider, clock: FakeClock | None = None, **kwargs: Any
) -> AnthropicClient:
    """An `AnthropicClient` for "claude-sonnet-4" pointed at `provider`, retrying by `RETRY`."""
    kwargs.setdefault("retry", RETRY)
    return AnthropicClient(
        "claude-sonnet-4", base_url=provider.url, clock=clock or FakeClock(), **kwargs
    )


def openai_body(
    text: str | None = "",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    cached_tokens: int = 0,
    model: str = "gpt-4o-2024-08-06",
    finish_reason: str = "stop",
) -> dict[str, Any]:
    """A chat-completions response body."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {
                    "name": c["name"],
                    "arguments": c["arguments"]
                    if isinstance(c["arguments"], str)
                    else json.dumps(c["arguments"]),
                },
            }
            for c in tool_calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
        },
    }


def anthropic_body(
    blocks: list[dict[str, Any]],
    *,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int = 0,
    cache_write: int = 0,
    model: str = "claude-sonnet-4-20250514",
    stop_reason: str = "end_turn",
) -> dict[str, Any]:
    """A Messages-API response body."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write,
        },
    }


class FileCheck:
    """A completion check for tests: done when `name` in the workspace holds `expected`."""

    def __init__(self, name: str, expected: str) -> None:
        self.name = name
        self.expected = expected

    async def check(self, state: Any) -> str | None:
        path = state.workspace / self.name
        if not path.exists():
            return f"{self.name} does not exist yet"
        content = path.read_text(encoding="utf-8")
        if content != self.expected:
            return f"{self.name} holds {content!r}, expected {self.expected!r}"
        return None

    def description(self) -> str:
        return f"{self.name} must hold {self.expected!r}"
