"""`TerminationPolicy`: budgets first, then sensors, then (only on a claim of done) the check."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from attrs import evolve, field, frozen

from checks import AlwaysComplete, CompletionCheck, PreparesForRun
from harness import (
    CONTINUE,
    Clock,
    Completed,
    ConfigurationError,
    Decision,
    HaltReason,
    Limit,
    Message,
    RejectionLimit,
    SensorReading,
    SensorTripped,
    SessionStateSnapshot,
)

from ._budget import Budget
from ._sensors import BindsPerSession, Sensor


def _sensors(value: Sequence[Sensor]) -> tuple[Sensor, ...]:
    items = tuple(value)
    for item in items:
        if not isinstance(item, Sensor):
            raise ConfigurationError(f"'sensors' must hold Sensor objects (got {item!r})")
    return items


def _check(value: object) -> CompletionCheck:
    if not isinstance(value, CompletionCheck):
        raise ConfigurationError(
            f"'completion_check' must have async check(state) and description() (got {value!r})"
        )
    return value


def _positive(name: str, value: float | None, *, integer: bool = False) -> None:
    if value is None:
        return
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or value <= 0:
        what = "a positive int" if integer else "a positive number"
        raise ConfigurationError(f"{name!r} must be {what} (got {value!r})")


@frozen(kw_only=True)
class TerminationPolicy:
    """Decides after every turn whether the run goes on.

    Order, always: the budget (a used-up dimension halts and skips the check), then every
    sensor (a halt stops, a warning becomes feedback), then, only when the agent claims done,
    the completion check (None completes the run; a reason goes into the next turn). The
    check fails closed: an exception or `check_timeout` is a reason, never a pass. After
    `max_rejections` rejected claims the run halts with `RejectionLimit`.
    """

    budget: Budget = field(factory=Budget)
    sensors: tuple[Sensor, ...] = field(default=(), converter=_sensors)
    completion_check: CompletionCheck = field(factory=AlwaysComplete, converter=_check)
    check_timeout: float | None = 600.0
    max_rejections: int | None = 10
    check_before_first_turn: bool = False

    def __attrs_post_init__(self) -> None:
        _positive("check_timeout", self.check_timeout)
        _positive("max_rejections", self.max_rejections, integer=True)
        if not isinstance(self.budget, Budget):
            raise ConfigurationError(f"'budget' must be a Budget (got {self.budget!r})")

    @property
    def wall_time(self) -> float | None:
        return self.budget.max_wall_time

    @property
    def requires_known_cost(self) -> bool:
        return self.budget.max_cost_usd is not None

    def description(self) -> str:
        return self.completion_check.description()

    async def start_run(self, snapshot: SessionStateSnapshot) -> None:
        if isinstance(self.completion_check, PreparesForRun):
            await self.completion_check.prepare(snapshot)

    def start_session(self, *, clock: Clock, limit: Limit | None = None) -> _PolicySession:
        return _PolicySession(self, clock, limit)


class _PolicySession:
    __slots__ = ("_check", "_clock", "_limit", "_policy", "_sensors")

    def __init__(self, policy: TerminationPolicy, clock: Clock, limit: Limit | None) -> None:
        self._policy = policy
        self._clock = clock
        self._limit = limit
        self._check = policy.completion_check
        self._sensors: tuple[Sensor, ...] = tuple(
            s.bind() if isinstance(s, BindsPerSession) else s for s in policy.sensors
        )

    def before_call(self, snapshot: SessionStateSnapshot) -> HaltReason | None:
        halt = self._policy.budget.exceeded(snapshot, scope="run")
        if halt is None and self._limit is not None:
            halt = self._limit.exceeded(snapshot, scope="session")
        return halt

    def before_tool_call(self, snapshot: SessionStateSnapshot) -> HaltReason | None:
        halt = self._policy.budget.exceeded(snapshot, scope="run", tools_only=True)
        if halt is None and self._limit is not None:
            halt = self._limit.exceeded(snapshot, scope="session", tools_only=True)
        return halt

    async def after_turn(self, snapshot: SessionStateSnapshot, *, run_check: bool) -> Decision:
        halt = self.before_call(snapshot)
        if halt is not None:
            return Decision(halt=halt)
        readings: list[SensorReading] = []
        feedback: list[Message] = []
        for sensor in self._sensors:
            reading = sensor.read(snapshot)
            if reading.status == "ok":
                continue
            reading = evolve(reading, sensor=sensor.name)
            readings.append(reading)
            if reading.status == "halt":
                return Decision(
                    halt=SensorTripped(sensor.name, reading.message), readings=tuple(readings)
                )
            feedback.append(Message.feedback(f"sensor:{sensor.name}", reading.message))
        if not run_check:
            if not readings:
                return CONTINUE
            return Decision(readings=tuple(readings), feedback=tuple(feedback))
        reason = await self.check(snapshot)
        if reason is None:
            return Decision(
                halt=Completed(), readings=tuple(readings), feedback=tuple(feedback), checked=True
            )
        rejections = len(snapshot.check_reasons) + 1
        cap = self._policy.max_rejections
        halt = RejectionLimit(rejections, reason) if cap is not None and rejections >= cap else None
        return Decision(
            halt=halt,
            readings=tuple(readings),
            feedback=tuple(feedback),
            checked=True,
            rejection=reason,
        )

    async def check(self, snapshot: SessionStateSnapshot) -> str | None:
        timeout = self._policy.check_timeout
        name = type(self._check).__name__
        try:
            if timeout is None:
                return _validated(await self._check.check(snapshot), name)
            with self._clock.deadline_scope(self._clock.now() + timeout) as scope:
                reason = await self._check.check(snapshot)
        except Exception as exc:
            return f"the completion check {name} failed with {type(exc).__name__}: {exc}"
        if scope.cancelled_caught:
            return f"the completion check {name} did not finish within {timeout:g}s"
        return _validated(reason, name)


def _validated(reason: Any, name: str) -> str | None:
    if reason is None:
        return None
    if not isinstance(reason, str):
        return f"the completion check {name} returned {reason!r} instead of None or a reason"
    if not reason.strip():
        return f"the completion check {name} returned an empty reason"
    return reason
