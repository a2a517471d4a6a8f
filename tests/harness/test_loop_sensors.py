"""Sensors come second: a tripped sensor halts with its name and message, a warning becomes
feedback in the next turn, and budgets are still read before any sensor."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import (
    BudgetExceeded,
    Harness,
    ScriptedModelClient,
    SensorRead,
    SensorTripped,
    SessionStateSnapshot,
)
from harness.extend import SensorReading
from harness.testing import FakeClock, ListSink
from termination import (
    Budget,
    ConsecutiveToolErrorsSensor,
    RepeatedToolCallSensor,
    Sensor,
    TerminationPolicy,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "loop"

pytestmark = pytest.mark.anyio


class CountingCheck:
    def __init__(self) -> None:
        self.calls = 0

    async def check(self, state: SessionStateSnapshot) -> str | None:
        self.calls += 1
        return None

    def description(self) -> str:
        return "Done when asked."


def peek(path: str) -> str:
    """Look at a file."""
    return f"contents of {path}"


def fragile(n: int) -> str:
    """Always fails."""
    raise OSError(f"disk error {n}")


def readings(sink: ListSink) -> list[tuple[str, str]]:
    return [(e.sensor, e.status) for e in sink.events if isinstance(e, SensorRead)]


async def test_repeated_tool_call_warns_then_trips() -> None:
    """The same call twice is a warning on that call's result; a third identical call halts with
    the sensor's name and message, and the completion check never runs."""
    model = ScriptedModelClient.from_jsonl(FIXTURES / "repeated_call.jsonl")
    sink = ListSink()
    check = CountingCheck()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(
            sensors=[RepeatedToolCallSensor(limit=3, warn_at=2)], completion_check=check
        ),
        tools=[peek],
        clock=FakeClock(),
        sinks=[sink],
    )
    result = await harness.run("look")
    assert result.halt_reason == SensorTripped(
        "repeated_tool_call", "the agent called peek with the same arguments 3 times in a row"
    )
    assert not result.verified
    assert result.halt_reason.describe().startswith("sensor repeated_tool_call tripped: ")
    assert readings(sink) == [("repeated_tool_call", "warn"), ("repeated_tool_call", "halt")]
    assert check.calls == 0
    # The warning rode on the tool result of the second call, not as a message of its own.
    second = next(m for m in result.transcript if m.tool_call_id == "r2")
    assert second.role == "tool"
    assert second.feedback_source == "sensor:repeated_tool_call"


async def test_consecutive_tool_errors_warn_then_trip() -> None:
    """Two failed calls in a row warn the agent; the third halts naming the last error."""
    model = ScriptedModelClient.from_jsonl(FIXTURES / "tool_errors.jsonl")
    sink = ListSink()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(sensors=[ConsecutiveToolErrorsSensor(limit=3, warn_at=2)]),
        tools=[fragile],
        clock=FakeClock(),
        sinks=[sink],
    )
    result = await harness.run("break things")
    assert result.halt_reason == SensorTripped(
        "consecutive_tool_errors",
        "3 tool calls in a row failed; the last, fragile, said: error: OSError: disk error 3",
    )
    assert readings(sink) == [
        ("consecutive_tool_errors", "warn"),
        ("consecutive_tool_errors", "halt"),
    ]


class HaltOnClaim:
    """A custom sensor that halts whenever the agent claims done."""

    name = "no_claims"

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        if snapshot.claims_done:
            return SensorReading.halt("claims are not allowed here")
        return SensorReading.ok()


async def test_a_sensor_halt_comes_before_the_completion_check() -> None:
    """A sensor that trips on the claiming turn stops the run before the check is asked."""
    assert isinstance(HaltOnClaim(), Sensor)
    check = CountingCheck()
    model = ScriptedModelClient.from_responses([{"text": "done"}])
    harness = Harness(
        model=model,
        policy=TerminationPolicy(sensors=[HaltOnClaim()], completion_check=check),
        clock=FakeClock(),
    )
    result = await harness.run("claim")
    assert result.halt_reason == SensorTripped("no_claims", "claims are not allowed here")
    assert check.calls == 0


async def test_budgets_are_read_before_sensors() -> None:
    """When the budget is used up on the turn a sensor would trip, the budget is the reason."""
    model = ScriptedModelClient.from_responses([{"text": "done"}])
    sink = ListSink()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(budget=Budget(max_turns=1), sensors=[HaltOnClaim()]),
        clock=FakeClock(),
        sinks=[sink],
    )
    result = await harness.run("claim")
    assert result.halt_reason == BudgetExceeded("max_turns", 1, 1)
    assert readings(sink) == []


class WarnOnce:
    """Warns on the first turn only."""

    name = "nudge"

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        if snapshot.turns == 1:
            return SensorReading.warn("slow down")
        return SensorReading.ok()


async def test_a_warning_after_a_text_turn_is_a_feedback_message_of_its_own() -> None:
    """After a turn without tool calls, a warning arrives as a tagged user message of its own,
    before the check's reason for the same turn."""
    model = ScriptedModelClient.from_responses(
        [
            {"text": "thinking"},
            {
                "text": "done",
                "expect": {
                    "last_role": "user",
                    "last_feedback_source": "completion_check",
                    "any_message_contains": '<harness-feedback source="sensor:nudge">\nslow down',
                    "message_count": 5,
                },
            },
        ]
    )

    class NotYetThenDone:
        def __init__(self) -> None:
            self.answers = ["keep going", None]

        async def check(self, state: SessionStateSnapshot) -> str | None:
            return self.answers.pop(0)

        def description(self) -> str:
            return "Two claims."

    harness = Harness(
        model=model,
        policy=TerminationPolicy(sensors=[WarnOnce()], completion_check=NotYetThenDone()),
        clock=FakeClock(),
    )
    result = await harness.run("think")
    assert result.verified
    feedback = [m for m in result.transcript if m.is_feedback]
    # The sensor's warning first, then the check's reason: both tagged, neither from the user.
    assert [m.feedback_source for m in feedback] == ["sensor:nudge", "completion_check"]
