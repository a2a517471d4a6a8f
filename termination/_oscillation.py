"""`OscillationSensor`: the agent cycles through the same few tool calls (A, B, A, B, ...)."""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from harness import ConfigurationError, SessionStateSnapshot, ToolCall
from harness.extend import SensorReading

from ._sensors import Action, _threshold, check_action, check_name, graded


def _same(a: ToolCall, b: ToolCall) -> bool:
    return a.name == b.name and a.arguments == b.arguments


def longest_cycle(calls: Sequence[ToolCall], max_period: int) -> tuple[int, int]:
    """The repeating pattern that ends `calls` with the most repetitions: (period, repeats).

    A period-p pattern repeats r times when the last ``p * r`` calls are the same p calls in
    the same order, r times over. Period 1 is an exact repeat. On a tie the shortest period
    wins (A, A, A, A is period 1 repeated four times, not period 2 twice).
    """
    best = (1, 1 if calls else 0)
    n = len(calls)
    for period in range(1, max_period + 1):
        if n < 2 * period:
            break
        match = 0
        for i in range(n - 1, period - 1, -1):
            if not _same(calls[i], calls[i - period]):
                break
            match += 1
        repeats = (match + period) // period
        if repeats > best[1]:
            best = (period, repeats)
    return best


@frozen
class OscillationSensor:
    """Trips when the last tool calls are a pattern of up to `max_period` calls repeated
    `limit` times: A, B, A, B, A, B is period 2 repeated 3 times.

    Calls are equal when their names and arguments are. Exact repeats (period 1) count too,
    so this sensor also covers what `RepeatedToolCallSensor` does. It reads only after a
    turn that made tool calls, and looks at no more than ``limit * max_period`` of them.
    """

    limit: int = 4
    warn_at: int | None = None
    max_period: int = 3
    name: str = "oscillation"
    action: Action = "halt"

    def __attrs_post_init__(self) -> None:
        _threshold("OscillationSensor", self.limit, self.warn_at)
        check_action("OscillationSensor", self.action)
        check_name("OscillationSensor", self.name)
        period = self.max_period
        if isinstance(period, bool) or not isinstance(period, int) or not 1 <= period <= 10:
            raise ConfigurationError(
                f"OscillationSensor: 'max_period' must be an int from 1 to 10 (got {period!r})"
            )

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        outcomes = snapshot.tool_outcomes
        if not outcomes or outcomes[-1].turn != snapshot.turns:
            return SensorReading.ok()
        calls = [o.call for o in outcomes[-self.limit * self.max_period :]]
        period, repeats = longest_cycle(calls, self.max_period)
        if repeats < 2:
            return SensorReading.ok()
        names = ", ".join(c.name for c in calls[-period:])
        what = f"the same call ({names})" if period == 1 else f"the same {period} calls ({names})"
        return graded(
            repeats,
            limit=self.limit,
            warn_at=self.warn_at,
            action=self.action,
            halt=lambda: f"the agent repeated {what} {repeats} times in a row",
            warn=lambda: (
                f"You have repeated {what} {repeats} times in a row; you are going in circles. "
                "Step back, decide what is actually blocking you, and try a different approach."
            ),
        )
