"""Sensors: cheap readings of a session after every turn that catch a run going nowhere.

A sensor returns ``ok``, ``warn`` (feedback injected into the next turn) or ``halt`` (the run
stops with `SensorTripped` naming the sensor). Every built-in sensor takes a `limit`, an
optional lower `warn_at`, and an `action` saying what reaching the limit does (``"halt"``,
the default, or ``"warn"`` for a sensor that only ever advises).

Optional hooks a sensor may implement, each found by its method:

- `BindsPerSession.bind()` hands each session a fresh instance (for memory of earlier turns);
- `StartsSession.start(snapshot)` sees the session before its first model call (a baseline);
- `ReadsVerdicts.read_verdict(snapshot, reason)` is read again right after the completion
  check rejects a claim, with the rejection's `reason` (not yet in `snapshot.check_reasons`);
- `ReadsWorkspace.workspace_ignore` (on the configuration) asks the policy for a
  `WorkspaceMonitor` in each run, and `WatchesWorkspace` (on the bound instance) reads it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from attrs import frozen

from harness import ConfigurationError, SessionStateSnapshot
from harness.extend import SensorReading

if TYPE_CHECKING:
    from harness.extend import ToolOutcome

    from ._monitor import WorkspaceMonitor

Action = Literal["warn", "halt"]
_OK = SensorReading.ok()
_ACTIONS = ("warn", "halt")


@runtime_checkable
class Sensor(Protocol):
    """Reads a snapshot after each turn."""

    @property
    def name(self) -> str: ...

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading: ...


@runtime_checkable
class BindsPerSession(Protocol):
    """A sensor with per-session memory: `bind` returns a fresh instance for one session."""

    def bind(self) -> Sensor: ...


@runtime_checkable
class StartsSession(Protocol):
    """A sensor or feedback provider that records a baseline before the first model call."""

    def start(self, snapshot: SessionStateSnapshot) -> None: ...


@runtime_checkable
class ReadsVerdicts(Protocol):
    """A sensor read again right after the completion check rejects a claim of done.

    `reason` is that rejection; the snapshot's `check_reasons` are the verdicts before it.
    A sensor on the check's history so trips on the turn of the rejection rather than one
    model call later.
    """

    def read_verdict(self, snapshot: SessionStateSnapshot, reason: str) -> SensorReading: ...


@runtime_checkable
class WatchesWorkspace(Protocol):
    """A bound sensor, provider or trigger that reads the run's `WorkspaceMonitor`.

    `attach` is called before the session starts; `wants_settled(snapshot)` after each turn,
    before the monitor refreshes: True when a change still in flight would change what this
    consumer reads this turn (so the turn waits for pending events).
    """

    def attach(self, monitor: WorkspaceMonitor) -> None: ...

    def wants_settled(self, snapshot: SessionStateSnapshot) -> bool: ...


@runtime_checkable
class PacesTools(Protocol):
    """A `WatchesWorkspace` consumer told, before a turn's first tool call runs, that the
    turn's tools are about to write (to see whether the watcher is keeping up)."""

    def tools_starting(self) -> None: ...


@runtime_checkable
class ReadsWorkspace(Protocol):
    """A sensor or provider configuration that needs a `WorkspaceMonitor` for its runs;
    `workspace_ignore` names the files and folders it does not care about."""

    @property
    def workspace_ignore(self) -> tuple[str, ...]: ...


def check_action(owner: str, action: object) -> None:
    """Raise `ConfigurationError` unless `action` is ``"warn"`` or ``"halt"``."""
    if action not in _ACTIONS:
        raise ConfigurationError(f"{owner}: 'action' must be 'warn' or 'halt' (got {action!r})")


def check_name(owner: str, name: object) -> None:
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(f"{owner}: 'name' must be a non-empty string (got {name!r})")


def _threshold(name: str, limit: int, warn_at: int | None, *, minimum: int = 2) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < minimum:
        raise ConfigurationError(f"{name}: 'limit' must be an int >= {minimum} (got {limit!r})")
    if warn_at is not None and (
        isinstance(warn_at, bool) or not isinstance(warn_at, int) or not 1 <= warn_at < limit
    ):
        raise ConfigurationError(
            f"{name}: 'warn_at' must be an int from 1 to limit-1 = {limit - 1} (got {warn_at!r})"
        )


def graded(
    value: float,
    *,
    limit: float,
    warn_at: float | None,
    action: Action,
    halt: Callable[[], str],
    warn: Callable[[], str],
) -> SensorReading:
    """The reading for `value`: at `limit` the `action`, at `warn_at` a warning, else ok.

    `halt` words the report for the person reading the result; `warn` speaks to the agent.
    Both are only called when needed, so an ok reading builds no strings.
    """
    if value >= limit:
        return SensorReading.halt(halt()) if action == "halt" else SensorReading.warn(warn())
    if warn_at is not None and value >= warn_at:
        return SensorReading.warn(warn())
    return SensorReading.ok()


class ToolStreakSensor(ABC):
    """Base of the sensors that count a streak of tool outcomes back from the newest one.

    Read after every turn: when the newest outcome belongs to this turn and `_starts` one, the
    outcomes before it are walked back while `_continues` holds, at most `limit` of them
    (counted from the end, so a long history is never measured or walked). A streak of
    `limit` is the `action`, one of `warn_at` a warning; the messages are built only then.
    A subclass is an attrs class with the four fields below.
    """

    __slots__ = ()
    limit: int
    warn_at: int | None
    name: str
    action: Action

    def __attrs_post_init__(self) -> None:
        owner = type(self).__name__
        _threshold(owner, self.limit, self.warn_at)
        check_action(owner, self.action)
        check_name(owner, self.name)

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        outcomes = snapshot.tool_outcomes
        try:
            newest = outcomes[-1]
        except IndexError:  # no tool call yet
            return _OK
        if newest.turn != snapshot.turns or not self._starts(newest):
            return _OK
        run = 1
        for back in range(2, self.limit + 1):
            try:
                earlier = outcomes[-back]
            except IndexError:
                break
            if not self._continues(newest, earlier):
                break
            run += 1
        if run < self.limit and (self.warn_at is None or run < self.warn_at):
            return _OK  # the usual case, without building the two messages
        return graded(
            run,
            limit=self.limit,
            warn_at=self.warn_at,
            action=self.action,
            halt=lambda: self._halt_text(newest, run),
            warn=lambda: self._warn_text(newest, run),
        )

    def _starts(self, newest: ToolOutcome) -> bool:
        """Whether the newest outcome begins a streak (every one does, by default)."""
        return True

    @abstractmethod
    def _continues(self, newest: ToolOutcome, earlier: ToolOutcome) -> bool:
        """Whether `earlier` extends the streak that `newest` ends."""

    @abstractmethod
    def _halt_text(self, newest: ToolOutcome, run: int) -> str:
        """The report of a streak of `run`, for the person reading the result."""

    @abstractmethod
    def _warn_text(self, newest: ToolOutcome, run: int) -> str:
        """The warning of a streak of `run`, to the agent."""


@frozen
class RepeatedToolCallSensor(ToolStreakSensor):
    """Trips when the same tool call (name and arguments) is made `limit` times in a row.

    With `warn_at`, a run of that length first becomes a warning the agent sees.
    """

    limit: int = 4
    warn_at: int | None = None
    name: str = "repeated_tool_call"
    action: Action = "halt"

    def _continues(self, newest: ToolOutcome, earlier: ToolOutcome) -> bool:
        call, last = earlier.call, newest.call
        return call.name == last.name and call.arguments == last.arguments

    def _halt_text(self, newest: ToolOutcome, run: int) -> str:
        return f"the agent called {newest.call.name} with the same arguments {run} times in a row"

    def _warn_text(self, newest: ToolOutcome, run: int) -> str:
        return (
            f"You have called {newest.call.name} with the same arguments {run} times in a row; "
            "the result will not change. Try something different."
        )


@frozen
class ConsecutiveToolErrorsSensor(ToolStreakSensor):
    """Trips when `limit` tool calls in a row have failed."""

    limit: int = 5
    warn_at: int | None = None
    name: str = "consecutive_tool_errors"
    action: Action = "halt"

    def _starts(self, newest: ToolOutcome) -> bool:
        return newest.is_error

    def _continues(self, newest: ToolOutcome, earlier: ToolOutcome) -> bool:
        return earlier.is_error

    def _halt_text(self, newest: ToolOutcome, run: int) -> str:
        return (
            f"{run} tool calls in a row failed; the last, {newest.call.name}, said: "
            f"{newest.content[:200]}"
        )

    def _warn_text(self, newest: ToolOutcome, run: int) -> str:
        return f"Your last {run} tool calls failed. Read the errors and change your approach."
