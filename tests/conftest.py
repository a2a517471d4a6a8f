"""Shared test setup: every async test runs on asyncio and on trio, and no test reaches the
network beyond loopback."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _provider_server import FakeProvider, fake_provider


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every `@pytest.mark.anyio` test runs once per backend."""
    return str(request.param)


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    """A scripted model provider on loopback (see `_provider_server`)."""
    with fake_provider() as server:
        yield server


def _is_loopback(address: Any) -> bool:
    if isinstance(address, tuple) and address:
        host = address[0]
        if host in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False
    return True  # unix sockets and socketpairs are local


@pytest.fixture(scope="session")
def _session_bytecode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("check-bytecode")


@pytest.fixture(autouse=True)
def _own_baseline_cache(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
    _session_bytecode: Path,
) -> None:
    """Each test keeps cached suite baselines in a folder of its own, never the user's; the
    checks' Python bytecode (`checks._bytecode`, inside that folder) is the session's, as it
    is one user's: each test's workspace is a folder of its own, which the checks keep out of
    it, and the interpreter's modules are compiled once, not for every test (13 MB each)."""
    folder = tmp_path_factory.mktemp("baseline-cache")
    (folder / "bytecode").symlink_to(_session_bytecode, target_is_directory=True)
    monkeypatch.setenv("COMPLETION_HARNESS_CACHE", str(folder))


@pytest.fixture(autouse=True)
def _no_internet(monkeypatch: pytest.MonkeyPatch) -> None:
    """A global guard: a test that tries to reach a real provider fails at once."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded(self: socket.socket, address: Any) -> Any:
        if not _is_loopback(address):
            raise RuntimeError(f"tests may not reach the network (tried {address!r})")
        return real_connect(self, address)

    def guarded_ex(self: socket.socket, address: Any) -> Any:
        if not _is_loopback(address):
            raise RuntimeError(f"tests may not reach the network (tried {address!r})")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_ex)
