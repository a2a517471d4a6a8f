"""`run_sync_abandonable`: a blocking call on a daemon thread that a cancelled caller abandons;
the module's own pool (used where anyio's workers are not daemons) reuses idle threads and
never hands an abandoned one new work."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import pytest

import harness._process._threads as threads_module
from harness._process._threads import run_sync_abandonable

T = TypeVar("T")


async def on_pool(fn: Callable[[], T]) -> T:
    """Through the module's own pool, whatever the backend."""
    return await threads_module._on_daemon_thread(fn, anyio.lowlevel.current_token())


@pytest.mark.anyio
async def test_the_value_or_the_exception_comes_back() -> None:
    """What the function returns is returned; what it raises is raised in the caller."""
    assert await run_sync_abandonable(lambda: 42) == 42

    def broken() -> None:
        raise LookupError("nope")

    with pytest.raises(LookupError, match="nope"):
        await run_sync_abandonable(broken)


@pytest.mark.anyio
async def test_an_idle_thread_is_reused_and_an_abandoned_one_is_not() -> None:
    """Calls one after another share a daemon thread; a call abandoned while it blocks keeps
    its thread, and the next call gets another, which answers at once."""
    first = await on_pool(threading.get_ident)
    assert await on_pool(threading.get_ident) == first

    started = anyio.Event()
    release = threading.Event()
    token = anyio.lowlevel.current_token()

    def stuck() -> int:
        anyio.from_thread.run_sync(started.set, token=token)
        release.wait(30)
        return threading.get_ident()

    try:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(on_pool, stuck)
                await started.wait()
                scope.cancel()
        assert scope.cancelled_caught
        other = await on_pool(threading.get_ident)
        assert other != first
        assert threading.current_thread().ident not in (first, other)
    finally:
        release.set()


@pytest.mark.anyio
async def test_a_worker_idle_for_too_long_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool's workers are daemons, and one left idle for `IDLE_SECONDS` ends, so a burst
    of calls does not leave threads behind for good."""
    monkeypatch.setattr(threads_module, "IDLE_SECONDS", 0.01)
    monkeypatch.setattr(threads_module, "_POOL", threads_module._Pool())
    worker = await on_pool(threading.current_thread)
    assert isinstance(worker, threads_module._Worker)
    assert worker.daemon
    await anyio.to_thread.run_sync(worker.join, 30)
    assert not worker.is_alive()
