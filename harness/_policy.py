"""The seam between the turn loop and whatever decides when to stop.

`termination.TerminationPolicy` implements `Policy`; the harness only knows these protocols,
so the loop never imports the packages built on top of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from attrs import frozen

from ._check_error import CheckError
from ._clock import Clock
from ._halt import BudgetExceeded, HaltReason
from ._messages import Message
from ._state import SessionStateSnapshot
from ._work_progress import Assessment, WorkProgress

if TYPE_CHECKING:
    from ._protected import ProtectedPaths
    from ._verification import Baseline

Scope = Literal["run", "session"]


@frozen
class SensorReading:
    """What a sensor saw: ``ok``, ``warn`` (feedback for the next turn) or ``halt``."""

    status: Literal["ok", "warn", "halt"]
    message: str = ""
    sensor: str = ""

    @classmethod
    def ok(cls) -> SensorReading:
        return _OK

    @classmethod
    def warn(cls, message: str) -> SensorReading:
        return cls("warn", message)

    @classmethod
    def halt(cls, message: str) -> SensorReading:
        return cls("halt", message)


_OK = SensorReading("ok")


@frozen
class Decision:
    """What the policy decided after a turn.

    `halt` stops the session; otherwise `feedback` goes into the next request. `checked` says
    whether the completion check ran; `rejection` is its reason when it said "not yet", and
    `progress` what it measured (see `WorkProgress`), when it measures.
    """

    halt: HaltReason | None = None
    feedback: tuple[Message, ...] = ()
    readings: tuple[SensorReading, ...] = ()
    checked: bool = False
    rejection: str | None = None
    progress: WorkProgress | None = None
    error: CheckError | None = None
    """Why the check could not judge the work, when it could not (see `CheckError`)."""
    flaky: tuple[str, ...] = ()
    """Tests the check found flaky (failed and passed on the same code): reported apart."""


CONTINUE = Decision()


@runtime_checkable
class Limit(Protocol):
    """A budget the loop can ask whether a snapshot has used it up."""

    @property
    def wall_time(self) -> float | None: ...

    def exceeded(
        self,
        snapshot: SessionStateSnapshot,
        *,
        scope: Scope,
        tools_only: bool = False,
        pending: int = 0,
    ) -> BudgetExceeded | None:
        """The first dimension used up (``used >= limit``), or None.

        With `tools_only`, only the dimension that gates a tool call (the tool-call count);
        `pending` tool calls were admitted since `snapshot` and count as used.
        """
        ...


@runtime_checkable
class PolicySession(Protocol):
    """The policy's state for one session (sensors are bound per session)."""

    def before_call(self, snapshot: SessionStateSnapshot) -> HaltReason | None:
        """Budgets: may the session make its first model call? (``used >= limit`` halts.)

        Asked once, before a session's first call; before every later call the budgets are
        the first step of `after_turn`, on the snapshot that ends the turn before it.
        """
        ...

    def before_tool_call(
        self, snapshot: SessionStateSnapshot, *, pending: int = 0
    ) -> HaltReason | None:
        """Budgets that gate a tool call: the tool-call count.

        Asked before each call a turn asks for, before any of them runs, with the snapshot
        the turn started from: its tool-call counts plus `pending`, the calls of the same
        turn admitted before this one, are exact. Wall time needs no gate here: deadline
        scopes cancel an awaited tool, and the decision after the turn halts the run.
        """
        ...

    async def after_turn(self, snapshot: SessionStateSnapshot, *, run_check: bool) -> Decision:
        """Budgets, then sensors, then (when `run_check`) the completion check."""
        ...

    async def check(self, snapshot: SessionStateSnapshot) -> str | None:
        """Run the completion check, failing closed: an error or a timeout is a reason."""
        ...

    async def assess(self, snapshot: SessionStateSnapshot) -> Assessment:
        """As `check`, with the progress the check measured (None when it does not measure)."""
        ...


@runtime_checkable
class Policy(Protocol):
    """Decides, after every turn, whether the run goes on."""

    @property
    def wall_time(self) -> float | None:
        """The run's wall-time limit in seconds, enforced as a cancel scope."""
        ...

    @property
    def check_before_first_turn(self) -> bool: ...

    @property
    def requires_known_cost(self) -> bool:
        """True when a cost budget is set, so every model call must report its price."""
        ...

    @property
    def bounded(self) -> bool:
        """True when some budget limit caps the run (turns, tool calls, tokens, cost, time)."""
        ...

    def description(self) -> str:
        """What "done" means, told to the agent at the start of every session."""
        ...

    async def start_run(self, snapshot: SessionStateSnapshot) -> Sequence[Baseline | str] | None:
        """Called once before the agent's first turn (checks record baselines here); the
        baselines returned go into the transcript and onto the result, and a text among them
        is a warning the run says at its start (a ``run.warning`` event)."""
        ...

    def start_session(self, *, clock: Clock, limit: Limit | None = None) -> PolicySession: ...


@runtime_checkable
class ProtectsPaths(Protocol):
    """A policy that names paths the agent may not change (tests, feature lists, scripts).

    The run records them before anything else, the workspace tools refuse to write them,
    and every claim is judged with them as they were (see `RunState.judge`).
    """

    @property
    def protected(self) -> ProtectedPaths: ...


@runtime_checkable
class ScopesRun(Protocol):
    """A policy that holds something for the length of each run (a workspace watcher, say).

    `Harness.run` enters ``run_scope(snapshot)`` after `start_run` and leaves it when the
    strategy returns, fails or is cancelled, before the run's result is made.
    """

    def run_scope(self, snapshot: SessionStateSnapshot) -> AbstractAsyncContextManager[object]:
        """What to hold for the run that `snapshot` (taken before its first turn) begins."""
        ...
