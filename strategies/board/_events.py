"""Board events: each is a row of the event log first, then a structlog line and an item of
`Board.stream()`, so whatever a caller sees is already in the database."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args, runtime_checkable

from attrs import asdict, frozen

if TYPE_CHECKING:
    pass

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
    "task.paused",
    "account.paused",
    "account.resumed",
]
KINDS: tuple[Kind, ...] = get_args(Kind)
LEVELS = {"task.review": "warning", "task.failed": "warning", "account.paused": "warning"}


@frozen
class BoardEvent:
    """One entry of the event log. `seq` orders the log; `at` is Unix time.

    ``task.assigned``: an agent took the task (a new attempt). ``task.rejected``: the
    completion check (or an evaluator) sent a claim of done back. ``task.complete``,
    ``task.review``, ``task.failed``: the attempt's outcome. ``task.retried``: the task is
    pending again (a transient failure, an interrupted attempt, or by hand).
    ``task.unblocked``: its last dependency completed. ``account.paused``: an attempt met
    its account's usage limit (`agent` names the account); ``account.resumed``: the limit
    was reset. ``task.paused``: an attempt stopped because its account paused; the task is
    pending again and resumes where it was, without charging an attempt.
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
        if logger is None:
            # Here, not at the top: `harness board status --events` reads events, logs none.
            from harness.extend import LibraryLogger

            logger = LibraryLogger("harness.board")
        self._log = logger

    def emit(self, event: BoardEvent) -> None:
        data = event.to_dict()
        del data["kind"]
        getattr(self._log, LEVELS.get(event.kind, "info"))(event.kind, **data)
