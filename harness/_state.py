"""Session state: the append-only transcript, the typed store, and the frozen snapshot.

A snapshot never copies history: it holds read-only views that stop at the length the
history had when the snapshot was taken. Histories only ever grow, so a view stays exact.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from attrs import frozen

from ._usage import Usage

if TYPE_CHECKING:
    from ._events._tool import ToolOutcome
    from ._messages import Message
    from ._protected import Tampering

T = TypeVar("T")


class HistoryView(Sequence[T]):
    """A read-only window on the first `length` items of a list that only grows."""

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[T], length: int | None = None) -> None:
        self._items = items
        self._length = len(items) if length is None else length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...
    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._length)
            return self._items[start:stop:step]
        position = operator.index(index)
        if position < 0:
            position += self._length
        if not 0 <= position < self._length:
            raise IndexError("history index out of range")
        return self._items[position]

    def __iter__(self) -> Iterator[T]:
        return islice(self._items, self._length)

    def __reversed__(self) -> Iterator[T]:
        # Newest first without walking the whole history: from the end of the list, skipping
        # what was appended after the view was taken.
        items = self._items
        return islice(reversed(items), len(items) - self._length, None)

    def last(self, n: int) -> Sequence[T]:
        """The last `n` items, oldest first, without touching the rest of the history."""
        start = max(0, self._length - n)
        return self._items[start : self._length]

    def __repr__(self) -> str:
        return f"HistoryView(len={self._length})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class SessionStore:
    """Typed session state that tools write and checks read: one slice per value type.

    Slices are copied on write, so a `Mapping` handed to a snapshot never changes under it.
    """

    __slots__ = ("_slices",)

    def __init__(self) -> None:
        self._slices: dict[type, tuple[Any, ...]] = {}

    def put(self, value: object) -> None:
        """Append `value` to the slice of its type."""
        slices = dict(self._slices)
        slices[type(value)] = (*slices.get(type(value), ()), value)
        self._slices = slices

    def seed(self, *values: object) -> None:
        """Put several values (handy for tests and for restoring state)."""
        for value in values:
            self.put(value)

    def frozen(self) -> Mapping[type, tuple[Any, ...]]:
        return self._slices


@frozen(eq=False)
class SessionStateSnapshot:
    """Everything a sensor, a feedback provider or a completion check may read about a session.

    Counters without a prefix are the current session's (a Ralph iteration, a builder or
    evaluator session); `run_*` counters cover the whole run.
    """

    run_id: str
    task: str
    agent: str
    iteration: int
    workspace: Path | None
    messages: Sequence[Message]
    tool_outcomes: Sequence[ToolOutcome]
    check_reasons: Sequence[str]
    turns: int
    tool_calls: int
    usage: Usage
    run_turns: int
    run_tool_calls: int
    run_usage: Usage
    started_at: float
    now: float
    deadline: float | None
    claims_done: bool
    final_text: str | None
    store: Mapping[type, tuple[Any, ...]]
    context_window: int | None = None
    session_started_at: float = 0.0
    tampering: tuple[Tampering, ...] = ()
    """The protected paths found changed when this claim was judged (empty otherwise)."""
    tampered_claims: int = 0
    """How many claims of the run so far found protected paths changed."""
    measure_whole: bool = False
    """The progress measured on this snapshot is compared with a checkpoint's (a rollback on
    regression judges by it): a check with a quicker way to reject (a test suite's fast path)
    measures the whole of the work instead."""

    @classmethod
    def standalone(
        cls,
        workspace: Path | None = None,
        *,
        task: str = "",
        final_text: str | None = None,
        now: float = 0.0,
        **fields: Any,
    ) -> SessionStateSnapshot:
        """A snapshot with no run behind it: zero counters, empty histories, time `now`.

        For checking a workspace outside a run (``harness check``, hooks) and for tests; any
        other field may be given by name. It claims done exactly when `final_text` is given.
        """
        values: dict[str, Any] = {
            "run_id": "standalone",
            "task": task,
            "agent": "builder",
            "iteration": 0,
            "workspace": workspace,
            "messages": (),
            "tool_outcomes": (),
            "check_reasons": (),
            "turns": 0,
            "tool_calls": 0,
            "usage": Usage(),
            "run_turns": 0,
            "run_tool_calls": 0,
            "run_usage": Usage(),
            "started_at": now,
            "now": now,
            "deadline": None,
            "claims_done": final_text is not None,
            "final_text": final_text,
            "store": {},
            "context_window": None,
            "session_started_at": now,
        }
        values.update(fields)
        return cls(**values)

    @property
    def elapsed(self) -> float:
        """Seconds since the run started, on the run's clock."""
        return self.now - self.started_at

    @property
    def session_elapsed(self) -> float:
        """Seconds since the current session started."""
        return self.now - self.session_started_at

    @property
    def remaining_time(self) -> float | None:
        """Seconds until the run's wall-time deadline, or None without one."""
        return None if self.deadline is None else self.deadline - self.now

    def latest(self, kind: type[T]) -> T | None:
        """The most recent value of type `kind` that tools put in the session store."""
        values = self.store.get(kind)
        return values[-1] if values else None

    def all(self, kind: type[T]) -> tuple[T, ...]:
        """Every value of type `kind` in the session store, oldest first."""
        return self.store.get(kind, ())

    @property
    def last_assistant_text(self) -> str | None:
        """The text of the newest assistant message, or None before the first one."""
        for message in reversed(self.messages):
            if message.role == "assistant":
                return message.content
        return None

    def __repr__(self) -> str:
        return (
            f"SessionStateSnapshot(agent={self.agent!r}, iteration={self.iteration}, "
            f"turns={self.turns}, run_turns={self.run_turns}, messages={len(self.messages)}, "
            f"claims_done={self.claims_done})"
        )
