"""Checkpointing a run's workspace: opening the series, saving, restoring, each with its event.

`RunState.start_checkpoints`, `checkpoint` and `restore` (what strategies call) and the
session's checkpoint after a rejected claim (`after_rejection`) come here. Loaded only by a
run that keeps checkpoints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from .._checkpoints._base import (
    Checkpoint,
    CheckpointDiff,
    CheckpointError,
    Checkpointing,
)
from .._checkpoints._open import open_checkpoints
from .._events._checkpoint import CheckpointFailed, CheckpointRestored, CheckpointSaved
from .._work_progress import WorkProgress

if TYPE_CHECKING:
    from ._run_state import RunState


async def start(run: RunState, settings: Checkpointing | None) -> bool:
    """See `RunState.start_checkpoints` (which has seen that there is a workspace and no
    checkpoints yet)."""
    assert run.workspace is not None
    settings = settings or Checkpointing()
    try:
        run.checkpoints = await open_checkpoints(
            run.workspace,
            series=run.run_id,
            clock=run.clock,
            backend=settings.backend,
            state_dir=settings.state_dir,
        )
    except (CheckpointError, OSError) as exc:
        run.emit(CheckpointFailed(run.elapsed(), "open", f"{type(exc).__name__}: {exc}"))
        return False
    return True


async def save(run: RunState, label: str, progress: WorkProgress | None) -> Checkpoint | None:
    """See `RunState.checkpoint`."""
    store = run.checkpoints
    if store is None:
        return None
    at = run.elapsed()
    try:
        saved = await store.save(label, at=at, progress=progress)
    except (CheckpointError, OSError) as exc:
        run.emit(CheckpointFailed(run.elapsed(), label, f"{type(exc).__name__}: {exc}"))
        return None
    run.last_checkpoint = saved
    run.emit(
        CheckpointSaved(
            at, saved.label, saved.id, saved.tree, saved.seq, saved.kind, saved.progress
        )
    )
    return saved


async def restore(run: RunState, checkpoint: Checkpoint, reason: str) -> CheckpointDiff | None:
    """See `RunState.restore`."""
    store = run.checkpoints
    if store is None:
        return None
    try:
        # A restore cut off half way would leave a mix of two states: it runs to its end
        # (each git command has its own time limit) even when the run is cancelled.
        with anyio.CancelScope(shield=True):
            changed = await store.restore(checkpoint)
    except (CheckpointError, OSError) as exc:
        label = f"restore {checkpoint.short_id}"
        run.emit(CheckpointFailed(run.elapsed(), label, f"{type(exc).__name__}: {exc}"))
        return None
    run.emit(
        CheckpointRestored(
            run.elapsed(),
            checkpoint.id,
            checkpoint.label,
            reason,
            len(changed.added),
            len(changed.modified),
            len(changed.deleted),
        )
    )
    return changed


async def after_rejection(
    run: RunState, *, agent: str, iteration: int, turn: int, progress: WorkProgress | None
) -> None:
    """The checkpoint a session saves after the completion check rejected a claim."""
    await save(run, f"claim rejected ({agent}, iteration {iteration}, turn {turn})", progress)
