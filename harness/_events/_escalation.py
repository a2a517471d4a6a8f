"""The event of a model ladder's climb (see `harness.ModelLadder`): ``model.escalated``.

Apart from the run's events because only a run on a ladder emits it; the session imports it,
and the decoder loads it with the other kinds (`_KIND_MODULES`).
"""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from ._base import Event, omitted


@frozen
class ModelEscalated(Event):
    """The run plateaued on model `from_model` and goes on with `to_model` (rungs count from
    0); `trigger` says how it plateaued and `detail` what was seen (the repeated reason, the
    sensor's warning, the progress that did not move). The next turn uses the new model."""

    name: ClassVar[str] = "model.escalated"
    agent: str
    turn: int
    from_rung: int
    to_rung: int
    from_model: str
    to_model: str
    trigger: str
    detail: str = field(metadata=omitted(""))
