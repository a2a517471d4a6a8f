"""One SDK client per provider client and event loop: calls share its connections, each
loop gets its own, and each is closed in its own loop, by `aclose` or when the loop ends."""

from __future__ import annotations

import gc
import threading
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from _provider_server import FakeProvider, Reply, anthropic_body, openai_body
from structlog.testing import capture_logs

from harness import AnthropicClient, Message, OpenAIClient
from harness._providers._base import ProviderClient
from harness._providers._loop_clients import LoopClients
from harness.extend import ModelRequest

KEY = "sk-loopback-reuse-1a2b3c"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def openai(provider: FakeProvider) -> OpenAIClient:
    provider.script(*[Reply(openai_body("ok"))] * 10)
    return OpenAIClient("gpt-4o", base_url=provider.url + "/v1")


def anthropic(provider: FakeProvider) -> AnthropicClient:
    provider.script(*[Reply(anthropic_body([{"type": "text", "text": "ok"}]))] * 10)
    return AnthropicClient("claude-sonnet-4", base_url=provider.url)


CLIENTS = [openai, anthropic]


def hi() -> ModelRequest:
    return ModelRequest([Message.user("hi")])


async def _closed(provider: FakeProvider, connection: int) -> bool:
    return await anyio.to_thread.run_sync(provider.wait_closed, connection)


@pytest.mark.anyio
@pytest.mark.parametrize("make", CLIENTS)
async def test_calls_in_one_loop_share_one_connection(provider: FakeProvider, make: Any) -> None:
    """Three calls go over one kept-alive connection: the SDK client is built once."""
    client: ProviderClient = make(provider)
    for _ in range(3):
        assert (await client.complete(hi())).text == "ok"
    assert len(provider.requests) == 3
    assert len(provider.connections) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("make", CLIENTS)
async def test_leaving_async_with_closes_the_connection(provider: FakeProvider, make: Any) -> None:
    """``async with client:`` closes the loop's SDK client, and so its connection, on exit."""
    client: ProviderClient = make(provider)
    async with client:
        await client.complete(hi())
    [connection] = provider.connections
    assert await _closed(provider, connection)


@pytest.mark.anyio
async def test_aclose_closes_the_connection_and_the_client_stays_usable(
    provider: FakeProvider,
) -> None:
    """`aclose` closes the loop's connections at once; the next call opens a new client."""
    client = openai(provider)
    await client.complete(hi())
    assert repr(client._clients) == "LoopClients(open=1)"
    await client.aclose()
    assert repr(client._clients) == "LoopClients(open=0)"
    [first] = provider.connections
    assert await _closed(provider, first)
    await client.complete(hi())
    assert provider.connections[1] != first
    await client.aclose()


@pytest.mark.anyio
async def test_concurrent_first_calls_share_one_sdk_client(
    provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls started together in one loop build one SDK client between them."""
    client = openai(provider)
    built: list[str] = []
    build = client._build

    def counting(key: str) -> Any:
        built.append(key)
        return build(key)

    monkeypatch.setattr(client._clients, "_build", counting)
    async with client, anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(client.complete, hi())
    assert len(built) == 1
    assert len(provider.requests) == 4


@pytest.mark.anyio
async def test_a_changed_key_gets_a_new_sdk_client(
    provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key is read at each call; when it changes, the next call carries the new one."""
    client = openai(provider)
    async with client:
        await client.complete(hi())
        monkeypatch.setenv("OPENAI_API_KEY", "sk-rotated")
        await client.complete(hi())
    assert [r.headers["authorization"] for r in provider.requests] == [
        f"Bearer {KEY}",
        "Bearer sk-rotated",
    ]
    first, second = provider.connections
    assert await _closed(provider, first)
    assert await _closed(provider, second)


@pytest.mark.parametrize("make", CLIENTS)
def test_one_client_serves_asyncio_then_trio_then_asyncio(
    provider: FakeProvider, make: Any
) -> None:
    """Each event loop gets its own SDK client (a pool is bound to the loop that opened it),
    and the one a loop leaves open is closed as that loop ends, in that loop."""
    client: ProviderClient = make(provider)

    async def twice() -> None:
        assert (await client.complete(hi())).text == "ok"
        assert (await client.complete(hi())).text == "ok"

    for backend in ("asyncio", "trio", "asyncio"):
        anyio.run(twice, backend=backend)
        assert repr(client._clients) == "LoopClients(open=0)"
        assert provider.wait_closed(provider.connections[-1])
    assert len(provider.connections) == 3
    assert len(provider.requests) == 6


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_client_dropped_mid_run_is_closed_as_its_loop_ends(
    provider: FakeProvider, backend: str
) -> None:
    """A provider client garbage-collected while its loop runs still has its SDK client closed
    by the loop's shutdown: no warning, no socket left open."""

    async def call_and_drop() -> None:
        client = openai(provider)
        await client.complete(hi())
        del client
        gc.collect()
        await anyio.lowlevel.checkpoint()

    anyio.run(call_and_drop, backend=backend)
    [connection] = provider.connections
    assert provider.wait_closed(connection)


def test_two_runs_in_two_threads_use_one_client_at_once(provider: FakeProvider) -> None:
    """Two event loops in two threads share a provider client; each uses its own SDK client."""
    client = openai(provider)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            anyio.run(client.complete, hi())
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert errors == []
    assert len(provider.connections) == 2
    assert all(provider.wait_closed(c) for c in provider.connections)


class _Unclosable:
    """An SDK client stand-in whose close fails."""

    async def close(self) -> None:
        raise OSError("socket already gone")


@pytest.mark.anyio
async def test_a_client_that_fails_to_close_is_logged_and_dropped() -> None:
    """Closing never raises into the caller or the loop's shutdown: the failure is a warning."""
    clients = LoopClients(lambda key: _Unclosable())
    first = await clients.get("k")
    assert await clients.get("k") is first
    with capture_logs() as logs:
        await clients.aclose()
    assert [(e["event"], e["error"]) for e in logs] == [
        ("model.client_close_failed", "OSError('socket already gone')")
    ]
    assert len(clients) == 0
    assert await clients.get("k") is not first
    await clients.aclose()
