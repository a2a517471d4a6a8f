"""The single writer: every use of a running board's database goes through one task, which
runs the operations one at a time, in the order they were sent, in a worker thread.

So SQLite never blocks the event loop, the one connection is never used by two threads at
once, and events are published (structlog, streams) only after their transaction committed.
`call` waits for an operation's result; `post` is for synchronous code (a run's event sink)
and does not wait. Operations queued together run in one trip to the thread, each still its
own transaction.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from attrs import define

from ._events import BoardEvent
from ._store import BoardStore

T = TypeVar("T")


@define
class _Op:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    done: anyio.Event | None
    result: Any = None
    error: BaseException | None = None


class Writer:
    """Serves `BoardStore` operations until closed (see the module docstring)."""

    def __init__(self, store: BoardStore, publish: Callable[[list[BoardEvent]], None]) -> None:
        self._store = store
        self._publish = publish
        self._send, self._receive = anyio.create_memory_object_stream[_Op](math.inf)
        self._limiter = anyio.CapacityLimiter(1)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        op = _Op(fn, args, anyio.Event())
        self._send.send_nowait(op)
        assert op.done is not None
        await op.done.wait()
        if op.error is not None:
            raise op.error
        result: T = op.result
        return result

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Queue `fn` without waiting. Once the board is stopping (closed), it is dropped: the
        attempt's transcript still has the event it records."""
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._send.send_nowait(_Op(fn, args, None))

    def close(self) -> None:
        """No more operations: `serve` returns once it has run the ones already sent."""
        self._send.close()

    async def serve(self) -> None:
        async with self._receive:
            async for op in self._receive:
                batch = [op]
                while True:
                    try:
                        batch.append(self._receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                await anyio.to_thread.run_sync(self._run, batch, limiter=self._limiter)
                self._publish(self._store.take_events())
                for item in batch:
                    if item.done is not None:
                        item.done.set()
                    elif item.error is not None:
                        raise item.error  # a record nobody waits for could not be written

    @staticmethod
    def _run(batch: list[_Op]) -> None:
        for op in batch:
            try:
                op.result = op.fn(*op.args)
            except Exception as exc:
                op.error = exc
