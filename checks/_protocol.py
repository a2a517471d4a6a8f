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

    A check whose `check` never waits for anything (it reads the snapshot or a small file and
    returns) may say so with an attribute ``inline = True``. The policy then calls it without
    the `check_timeout` deadline scope, which could never interrupt it and costs more than such
    a check; an inline check that does wait is stopped and counts as "not complete", with a
    reason that says so (see `is_inline`).
    """

    async def check(self, state: SessionStateSnapshot) -> str | None: ...

    def description(self) -> str: ...


def is_inline(check: object) -> bool:
    """Whether `check` declares that its `check` coroutine finishes without waiting (its
    ``inline`` attribute is True); anything else, a missing attribute included, is False."""
    return getattr(check, "inline", False) is True


@runtime_checkable
class PreparesForRun(Protocol):
    """A check that records a baseline when the run starts (before any agent action)."""

    async def prepare(self, state: SessionStateSnapshot) -> None: ...
