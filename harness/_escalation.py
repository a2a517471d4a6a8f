"""The seam between the turn loop and a model client that escalates when the run plateaus.

The loop knows, after every judged turn, what the policy decided: the completion check's
rejection and the progress it measured, and the sensors' warnings. It hands these to a client
that `Escalates` as a `JudgedTurn`; the client (`ModelLadder`) decides whether the run has
plateaued and moves to its next model, and the loop records the move as a ``model.escalated``
event (`harness._events._escalation`). The policy (termination) and the strategies feed it
through what they already return to the loop, so nothing here imports them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from attrs import frozen

from ._model import ModelClient
from ._work_progress import WorkProgress


@frozen
class JudgedTurn:
    """What the loop tells an escalating client after a turn the policy judged, or after a
    verdict a strategy asked for (a Ralph iteration's end).

    `rejection` is the completion check's reason when it ran and said "not yet" (None when it
    did not run or passed: `checked` says which); `progress` is what the check measured;
    `warnings` are the sensors' warnings of the turn, as ``"sensor: message"``.
    """

    agent: str
    turn: int
    checked: bool = False
    rejection: str | None = None
    progress: WorkProgress | None = None
    warnings: tuple[str, ...] = ()


@frozen
class Escalation:
    """A move from one model of a ladder to the next, and what triggered it."""

    from_rung: int
    to_rung: int
    from_model: str
    to_model: str
    trigger: str
    """``repeated_rejection``, ``no_progress`` or ``sensor_warning``."""
    detail: str


@runtime_checkable
class Escalates(Protocol):
    """A model client that may move to a stronger model when the run plateaus."""

    def observe(self, judged: JudgedTurn) -> Escalation | None:
        """Take in what a judged turn showed; the escalation it caused, or None."""
        ...

    def for_run(self) -> ModelClient:
        """A client that starts at the bottom and holds one run's climb (the `Harness` asks
        for one per run, so concurrent or later runs never share a climb)."""
        ...
