"""A bare ``async def check(state)`` as a completion check, for a spec's ``type = "python"``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from attrs import field, frozen

from harness import SessionStateSnapshot

from ._compose import Combinable


@frozen
class FunctionCheck(Combinable):
    """`function(state, **keywords)` is the check: None when the work is done, else a reason.
    The description is the function's docstring (its first paragraph), else its name.
    `label` names the check in what the run says of it (a spec's ``checks[0] (module:name)``)
    instead of the class's name."""

    function: Callable[..., Awaitable[str | None]]
    keywords: Mapping[str, Any] = field(factory=dict)
    label: str | None = None

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return await self.function(state, **self.keywords)

    def description(self) -> str:
        doc = (self.function.__doc__ or "").strip().split("\n\n")[0]
        name = getattr(self.function, "__qualname__", repr(self.function))
        return " ".join(doc.split()) or f"the check {name}(state) passes"
