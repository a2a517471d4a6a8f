"""`AlwaysComplete`: the agent's own claim of done is the check."""

from __future__ import annotations

from attrs import frozen

from harness import SessionStateSnapshot

from ._compose import Combinable


@frozen
class AlwaysComplete(Combinable):
    """Done whenever the agent says so: the model's own judgement is the check."""

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return None

    def description(self) -> str:
        return "The task is done when you say it is."
