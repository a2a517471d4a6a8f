"""What a session tells its agent between turns, and what it tells the model ladder.

The session's turn loop applies each policy decision: its readings are events
(`emit_readings`), the feedback goes into the next request
(`deliver`), a rejection as `rejection_feedback`, and a judged turn to a model ladder
(`observe`), whose climb is a ``model.escalated`` event.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import evolve

from .._escalation import Escalates, JudgedTurn
from .._events._escalation import ModelEscalated
from .._events._run import FeedbackInjected, SensorRead
from .._messages import Message
from .._policy import Decision, SensorReading
from ._run_state import RunState


def rejection_feedback(reason: str) -> Message:
    """The message that carries a completion check's reason into the next turn."""
    return Message.feedback(
        "completion_check",
        "You claimed the task is done, but the completion check did not pass:\n"
        f"{reason}\n"
        "Keep working on what is missing, then claim done again.",
    )


def not_executed_feedback(output: str) -> str:
    """What the agent is told after a turn that did no work."""
    said = output.strip()
    shown = f" It printed only:\n{said[-1000:]}" if said else " It printed nothing."
    return (
        f"Your last turn did no work, so it was not counted as a claim of done.{shown}\n"
        "Carry on with the task."
    )


def deliver(
    run: RunState, messages: list[Message], message: Message, *, agent: str, turn: int
) -> None:
    """Deliver feedback with the next request.

    After a turn with tool calls it is appended to the last tool result (the call that
    triggered it), so providers that want tool results to follow the assistant message
    directly see no extra message; otherwise it is a message of its own.
    """
    if messages and messages[-1].role == "tool":
        last = messages[-1]
        messages[-1] = evolve(
            last,
            content=f"{last.content}\n\n{message.content}",
            feedback_source=message.feedback_source,
        )
    else:
        messages.append(message)
    run.emit(
        FeedbackInjected(
            run.elapsed(), agent, turn, message.feedback_source or "harness", message.content
        )
    )


def emit_readings(
    run: RunState, readings: Sequence[SensorReading], *, agent: str, turn: int
) -> None:
    """A ``sensor.read`` event for each reading the policy took after a turn."""
    for reading in readings:
        run.emit(
            SensorRead(run.elapsed(), agent, turn, reading.sensor, reading.status, reading.message)
        )


def judged_turn(agent: str, turn: int, decision: Decision) -> JudgedTurn:
    """What a model ladder learns from the policy's decision after a turn."""
    warnings = tuple(f"{r.sensor}: {r.message}" for r in decision.readings if r.status == "warn")
    return JudgedTurn(
        agent, turn, decision.checked, decision.rejection, decision.progress, warnings
    )


def observe(run: RunState, ladder: Escalates, judged: JudgedTurn) -> None:
    """Tell the model ladder what a judged turn showed; record its climb, if any."""
    climb = ladder.observe(judged)
    if climb is not None:
        run.emit(
            ModelEscalated(
                run.elapsed(),
                judged.agent,
                judged.turn,
                climb.from_rung,
                climb.to_rung,
                climb.from_model,
                climb.to_model,
                climb.trigger,
                climb.detail,
            )
        )
