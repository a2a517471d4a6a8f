"""Helpers for the completion-check tests: snapshots of a workspace and a session."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from harness import Message, SessionStateSnapshot
from harness.extend import Clock, SessionStore


def snapshot(
    workspace: Path | None = None,
    *,
    run_id: str = "run-1",
    task: str = "Do the task.",
    final_text: str | None = None,
    messages: Sequence[Message] = (),
    store: Sequence[object] = (),
) -> SessionStateSnapshot:
    """A snapshot of a session that claims done with `final_text`, holding `store` values."""
    values = SessionStore()
    values.seed(*store)
    return SessionStateSnapshot.standalone(
        workspace,
        task=task,
        final_text=final_text,
        run_id=run_id,
        agent="agent",
        iteration=1,
        messages=tuple(messages),
        turns=1,
        run_turns=1,
        store=values.frozen(),
    )


def as_clock(fake: Any) -> Clock:
    """A `FakeClock` typed as a `Clock` (its deadline scope is a generator context manager)."""
    return cast(Clock, fake)
