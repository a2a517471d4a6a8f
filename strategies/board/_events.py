"""Board events: each is a row of the event log first, then a structlog line and an item of
`Board.stream()`, so whatever a caller sees is already in the database."""

from __future__ import annotations

import math
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args, runtime_checkable

import anyio
import structlog
from anyio.streams.memory import MemoryObjectSendStream
from attrs import asdict, frozen

if TYPE_CHECKING:
    from ._board import BoardResult

Kind = Literal[
    "board.started",
    "board.finished",
    "task.assigned",
    "task.rejected",
    "task.complete",
    "task.review",
    "task.failed",
    "task.retried",
    "task.unblocked",
]
KINDS: tuple[Kind, ...] = get_args(Kind)
LEVELS = {"task.review": "warning", "task.failed": "warning"}


@frozen
class BoardEvent:
    """One entry of the event log. `seq` orders the log; `at` is Unix time.

    ``task.assigned``: an agent took the task (a new attempt). ``task.rejected``: the
    completion check (or an evaluator) sent a claim of done back. ``task.complete``,
    ``task.review``, ``task.failed``: the attempt's outcome. ``task.retried``: the task is
    pending again (a transient failure, an interrupted attempt, or by hand).
    ``task.unblocked``: its last dependency completed.
    """

    seq: int
    at: float
    kind: Kind
    message: str
    task: str | None = None
    attempt: int | None = None
    agent: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class BoardSink(Protocol):
    """Anything that takes board events; `emit` is called on the loop and must not block."""

    def emit(self, event: BoardEvent) -> None: ...


class StructlogBoardSink:
    """Logs each event under its kind: warnings for review and failed, info otherwise."""

    def __init__(self, logger: Any = None) -> None:
        self._log = logger if logger is not None else structlog.get_logger("harness.board")

    def emit(self, event: BoardEvent) -> None:
        data = event.to_dict()
        del data["kind"]
        getattr(self._log, LEVELS.get(event.kind, "info"))(event.kind, **data)


class _StreamSink:
    def __init__(self, send: MemoryObjectSendStream[BoardEvent]) -> None:
        self._send = send

    def emit(self, event: BoardEvent) -> None:
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._send.send_nowait(event)


class BoardEventStream:
    """A board's events as an async iterator while it runs; then its `result`."""

    def __init__(self) -> None:
        send, self._receive = anyio.create_memory_object_stream[BoardEvent](math.inf)
        self.send = send
        self.sink = _StreamSink(send)
        self._result: BoardResult | None = None
        self.error: BaseException | None = None

    def __aiter__(self) -> BoardEventStream:
        return self

    async def __anext__(self) -> BoardEvent:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._receive.close()

    @property
    def result(self) -> BoardResult:
        """The `BoardResult`, once the events are exhausted."""
        if self._result is None:
            raise RuntimeError("the board has not finished; consume the events first")
        return self._result
