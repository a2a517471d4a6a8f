"""The `CompletionCheck` protocol: None when the work is done, otherwise what is missing."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from harness import SessionStateSnapshot


@runtime_checkable
class CompletionCheck(Protocol):
    """Decides whether the agent's claim of done holds.

    `check` returns None when the work is complete, or a short reason naming what is still
    missing; the reason is injected into the agent's next turn. `description` tells the agent
    up front what "done" means. A check that raises or times out counts as "not complete".
    """

    async def check(self, state: SessionStateSnapshot) -> str | None: ...

    def description(self) -> str: ...


@runtime_checkable
class PreparesForRun(Protocol):
    """A check that records a baseline when the run starts (before any agent action).

    `prepare` may return what it recorded, a `harness.Baseline` (or a tuple of them, for a
    composition), which the run writes to its transcript and lists on the result; None
    otherwise.
    """

    async def prepare(self, state: SessionStateSnapshot) -> object: ...
