"""Sensors: cheap readings of a session after every turn that catch a run going nowhere.

A sensor returns ``ok``, ``warn`` (feedback injected into the next turn) or ``halt`` (the run
stops with `SensorTripped`). A sensor that needs memory of earlier turns implements `bind()`
to hand each session a fresh instance.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from attrs import frozen

from harness import ConfigurationError, SensorReading, SessionStateSnapshot

Action = Literal["warn", "halt"]


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


def _threshold(name: str, limit: int, warn_at: int | None) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 2:
        raise ConfigurationError(f"{name}: 'limit' must be an int >= 2 (got {limit!r})")
    if warn_at is not None and (not isinstance(warn_at, int) or not 1 <= warn_at < limit):
        raise ConfigurationError(
            f"{name}: 'warn_at' must be an int from 1 to limit-1 = {limit - 1} (got {warn_at!r})"
        )


@frozen
class RepeatedToolCallSensor:
    """Trips when the same tool call (name and arguments) is made `limit` times in a row.

    With `warn_at`, a run of that length first becomes a warning the agent sees.
    """

    limit: int = 4
    warn_at: int | None = None
    name: str = "repeated_tool_call"

    def __attrs_post_init__(self) -> None:
        _threshold("RepeatedToolCallSensor", self.limit, self.warn_at)

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        outcomes = snapshot.tool_outcomes
        if not outcomes or outcomes[-1].turn != snapshot.turns:
            return SensorReading.ok()
        last = outcomes[-1].call
        run = 0
        for outcome in reversed(outcomes[-self.limit :]):
            call = outcome.call
            if call.name != last.name or call.arguments != last.arguments:
                break
            run += 1
        if run >= self.limit:
            return SensorReading.halt(
                f"the agent called {last.name} with the same arguments {run} times in a row"
            )
        if self.warn_at is not None and run >= self.warn_at:
            return SensorReading.warn(
                f"You have called {last.name} with the same arguments {run} times in a row; "
                "the result will not change. Try something different."
            )
        return SensorReading.ok()


@frozen
class ConsecutiveToolErrorsSensor:
    """Trips when `limit` tool calls in a row have failed."""

    limit: int = 5
    warn_at: int | None = None
    name: str = "consecutive_tool_errors"

    def __attrs_post_init__(self) -> None:
        _threshold("ConsecutiveToolErrorsSensor", self.limit, self.warn_at)

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        outcomes = snapshot.tool_outcomes
        if not outcomes or outcomes[-1].turn != snapshot.turns:
            return SensorReading.ok()
        run = 0
        for outcome in reversed(outcomes[-self.limit :]):
            if not outcome.is_error:
                break
            run += 1
        if run >= self.limit:
            last = outcomes[-1]
            return SensorReading.halt(
                f"{run} tool calls in a row failed; the last, {last.call.name}, said: "
                f"{last.content[:200]}"
            )
        if self.warn_at is not None and run >= self.warn_at:
            return SensorReading.warn(
                f"Your last {run} tool calls failed. Read the errors and change your approach."
            )
        return SensorReading.ok()


def sensor_from_config(table: dict[str, Any], *, where: str) -> Sensor:
    """Build a sensor from a config table with a ``type`` key."""
    kinds: dict[str, Any] = {
        "repeated_tool_call": RepeatedToolCallSensor,
        "consecutive_tool_errors": ConsecutiveToolErrorsSensor,
    }
    kinds.update(_EXTRA_SENSORS)
    args = dict(table)
    kind = args.pop("type", None)
    if kind not in kinds:
        raise ConfigurationError(f"{where}.type must be one of {sorted(kinds)} (got {kind!r})")
    try:
        sensor: Sensor = kinds[kind](**args)
    except TypeError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None
    return sensor


_EXTRA_SENSORS: dict[str, Any] = {}


def register_sensor(kind: str, factory: Any) -> None:
    """Make a sensor type available to config files under ``type = kind``."""
    _EXTRA_SENSORS[kind] = factory
