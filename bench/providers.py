"""Per-call cost of the provider clients: a new SDK client per call against one reused.

    python bench/providers.py               # both SDKs, asyncio and trio, 200 calls each
    python bench/providers.py --calls 50 --backend trio --sdk openai

Each call is one chat completion (or Anthropic message) answered at once by a keep-alive
HTTP/1.1 server on 127.0.0.1, so what is measured is the client's own cost per call. "new
client" closes the client after every call, as the harness did before one SDK client was kept
per event loop: each call builds an SDK client (its TLS trust store included) and opens a
connection. "reused" keeps the loop's client and its connection. The table shows the median
and the 90th percentile of wall time per call, in milliseconds; runs of the two modes are
interleaved, so a busy machine disturbs both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import AnthropicClient, Message, OpenAIClient
from harness._providers._base import ProviderClient
from harness.extend import ModelRequest

OPENAI_REPLY = {
    "id": "c",
    "object": "chat.completion",
    "created": 0,
    "model": "bench",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
ANTHROPIC_REPLY = {
    "id": "m",
    "type": "message",
    "role": "assistant",
    "model": "bench",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # answer at once, as real servers do

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        reply = ANTHROPIC_REPLY if self.path.endswith("/messages") else OPENAI_REPLY
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextmanager
def loopback_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host!s}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


SDKS: dict[str, Callable[[str], ProviderClient]] = {
    "openai": lambda url: OpenAIClient("bench", base_url=url + "/v1", api_key_env=None),
    "anthropic": lambda url: AnthropicClient("bench", base_url=url, api_key_env="BENCH_KEY"),
}
REQUEST = ModelRequest([Message.user("hi")])


async def per_call_ms(client: ProviderClient, calls: int, *, new_client: bool) -> list[float]:
    """Wall time of each of `calls` calls; `new_client` closes the SDK client after each."""
    await client.complete(REQUEST)  # imports, first connection: not part of either figure
    await client.aclose()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await client.complete(REQUEST)
        if new_client:
            await client.aclose()
        times.append((time.perf_counter() - started) * 1000)
    await client.aclose()
    return times


def measure(sdk: str, backend: str, calls: int, rounds: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"new client": [], "reused": []}
    with loopback_server() as url:
        client = SDKS[sdk](url)
        for _ in range(rounds):
            for mode in samples:
                new_client = mode == "new client"
                samples[mode] += anyio.run(
                    partial(per_call_ms, client, calls // rounds, new_client=new_client),
                    backend=backend,
                )
    return samples


def sdk_construction_ms(sdk: str, n: int = 50) -> float:
    """Building the SDK client alone (what a new client per call paid each time)."""
    import anthropic
    import openai

    build: Callable[[], object] = {
        "openai": lambda: openai.AsyncOpenAI(api_key="x", max_retries=0),
        "anthropic": lambda: anthropic.AsyncAnthropic(api_key="x", max_retries=0),
    }[sdk]
    build()
    started = time.perf_counter()
    for _ in range(n):
        build()
    return (time.perf_counter() - started) / n * 1000


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per mode and backend")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds per mode")
    parser.add_argument("--backend", choices=["asyncio", "trio"], action="append")
    parser.add_argument("--sdk", choices=sorted(SDKS), action="append")
    args = parser.parse_args()
    os.environ.setdefault("BENCH_KEY", "bench-key")
    print(f"{'sdk':<10} {'backend':<8} {'mode':<11} {'median ms':>10} {'p90 ms':>8}")
    for sdk in args.sdk or sorted(SDKS):
        for backend in args.backend or ["asyncio", "trio"]:
            samples = measure(sdk, backend, args.calls, args.rounds)
            for mode, times in samples.items():
                median = statistics.median(times)
                print(f"{sdk:<10} {backend:<8} {mode:<11} {median:>10.2f} {_p90(times):>8.2f}")
            speedup = statistics.median(samples["new client"]) / statistics.median(
                samples["reused"]
            )
            print(f"{'':<10} {'':<8} {'new/reused':<11} {speedup:>9.1f}x")
        print(f"{sdk:<10} building the SDK client alone: {sdk_construction_ms(sdk):.2f} ms")


if __name__ == "__main__":
    main()
