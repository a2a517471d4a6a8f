"""Attempts of a best-of run sample apart where the provider takes a seed: the
OpenAI-compatible client forks per attempt with ``seed`` = the configured seed + the attempt."""

from __future__ import annotations

import pytest
from _provider_server import FakeProvider, Reply, openai_body, openai_client

from harness import Message
from harness.extend import ForksAttempts, ModelRequest, implements

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-0123456789")


async def test_each_attempt_sends_its_own_seed(provider: FakeProvider) -> None:
    """Attempt k sends seed k (or the configured seed + k), with the other options as they
    were; the client it was forked from is unchanged."""
    for _ in range(4):
        provider.script(Reply(openai_body("ok")))
    plain = openai_client(provider, options={"temperature": 0.7})
    seeded = openai_client(provider, options={"seed": 40})
    assert implements(plain, ForksAttempts)
    asked = ModelRequest([Message.user("hi")])
    for client in (plain.for_attempt(1), plain.for_attempt(2), seeded.for_attempt(2), plain):
        await client.complete(asked)
    bodies = [r.body for r in provider.requests]
    assert [b.get("seed") for b in bodies] == [1, 2, 42, None]
    assert [b.get("temperature") for b in bodies] == [0.7, 0.7, None, 0.7]
    assert plain.options == {"temperature": 0.7}
