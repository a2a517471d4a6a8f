"""Events of something running in the background, as an async iterator; then its result.

`Harness.stream` and the task board's `Board.stream` both run their work in a task group
beside the caller and hand over each event as it happens; this is that one mechanism.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Generic, TypeVar

import anyio

E = TypeVar("E")
R = TypeVar("R")


class EventStream(Generic[E, R]):
    """The events of a run in progress, as an async iterator; then its `result`.

    The stream is also the sink the run emits into: `emit` never blocks and drops events once
    the caller has stopped reading.
    """

    def __init__(self, what: str = "run") -> None:
        self._send, self._receive = anyio.create_memory_object_stream[E](math.inf)
        self._what = what
        self._result: R | None = None
        self._error: Exception | None = None

    def emit(self, event: E) -> None:
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._send.send_nowait(event)

    # An iterator object, not an async generator: a caller that breaks out of `async for` leaves
    # no unfinished generator behind (trio warns about those when they are collected).
    def __aiter__(self) -> EventStream[E, R]:
        return self

    async def __anext__(self) -> E:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    @property
    def result(self) -> R:
        """What the run returned, once its events are exhausted."""
        if self._result is None:
            raise RuntimeError(f"the {self._what} has not finished; consume the events first")
        return self._result


@asynccontextmanager
async def stream_events(
    run: Callable[[EventStream[E, R]], Awaitable[R]], what: str = "run"
) -> AsyncIterator[EventStream[E, R]]:
    """Start `run(stream)` in the background and yield `stream`, which it emits into.

    Leaving the block before the run ends cancels the run. An exception the run raises is
    raised here when the block ends.
    """
    stream: EventStream[E, R] = EventStream(what)

    async def drive() -> None:
        with stream._send:
            try:
                stream._result = await run(stream)
            except Exception as exc:
                stream._error = exc

    async with anyio.create_task_group() as group:
        group.start_soon(drive)
        try:
            yield stream
        finally:
            if stream._result is None and stream._error is None:
                group.cancel_scope.cancel()
            stream._receive.close()
    if stream._error is not None:
        raise stream._error
