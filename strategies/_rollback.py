"""Rolling back a Ralph iteration that broke what already worked (``rollback="on_regression"``).

The workspace is checkpointed before the first iteration and at the end of each one, with
the progress the completion check measured (`done` of `total`: tests, features, files
passing). The best checkpoint so far is the latest that did no worse than the one before it
(`harness.checkpoints.improves_on`). An iteration that ends below it regressed: the
workspace goes back to the best checkpoint, and the next iteration is told, as tagged
feedback, what broke and that its predecessor's changes were rolled back (they stay in their
own checkpoint, for a person to look at).

Every checkpoint rollback compares (the start, each iteration's end) is measured whole: the
check's snapshot says so (`measure_whole`), and a check with a quicker way to reject (a test
suite's fast path) runs all of it. A start the check still could not measure is said once, as
a ``run.warning``: the first iteration cannot be rolled back.

An iteration whose check could not measure the work, after one that could, counts as a
regression: nothing shows that it did not break anything. A check that never measures
(`checks.measures_progress`: a wrapper without `measure`, an `AllOf` without
``progress=True``) never triggers a rollback, and the run says so at its start (a
``run.warning`` event, logged as a warning).
"""

from __future__ import annotations

from attrs import define, evolve

from checks import measures_progress
from harness.checkpoints import Checkpoint, improves_on
from harness.events import RunWarning
from harness.extend import Run

_SHOW = 10
ROLLBACK_SOURCE = "rollback"
"""The feedback source of the message that tells an iteration its predecessor was undone."""
UNMEASURED_START = (
    'rollback = "on_regression" cannot measure the start of the run: the completion check '
    "gave no progress there, so the first iteration is never rolled back (the first measured "
    "checkpoint is the best, whatever it broke)"
)


@define
class RollbackGuard:
    """Keeps a run's best checkpoint and restores it when an iteration regresses."""

    run: Run
    best: Checkpoint | None = None

    @classmethod
    async def start(cls, run: Run) -> RollbackGuard:
        """Begin from the run's start checkpoint (the `Harness` takes it, measured, for a
        strategy that `measures_start`); a run driven without one gets it here. Without
        checkpoints (no workspace, or it cannot be checkpointed: a ``checkpoint.failed``
        event says why) nothing is rolled back; nor with a check that cannot measure the
        work, which a ``run.warning`` says."""
        check = getattr(run.policy, "completion_check", None)
        if check is not None and not measures_progress(check):
            run.emit(RunWarning(run.elapsed(), ROLLBACK_SOURCE, cannot_measure(check)))
        if not await run.start_checkpoints():
            return cls(run)
        start = run.last_checkpoint
        if start is None:
            session = run.policy.start_session(clock=run.clock)
            assessed = await session.assess(evolve(run.snapshot(), measure_whole=True))
            start = await run.checkpoint("run started", assessed.progress)
        measured = check is not None and measures_progress(check)
        if start is not None and start.progress is None and measured:
            run.emit(RunWarning(run.elapsed(), ROLLBACK_SOURCE, UNMEASURED_START))
        return cls(run, start)

    async def after(self, iteration: int, saved: Checkpoint | None) -> str | None:
        """Judge the checkpoint iteration `iteration` ended with: keep it as the best, or
        restore the best and return what to tell the next iteration (None: nothing was)."""
        best = self.best
        if saved is None:  # not saved (a checkpoint.failed event says why): nothing to judge
            return None
        if improves_on(saved, best):
            self.best = saved
            return None
        assert best is not None
        why = (
            f"iteration {iteration} ended below the best checkpoint so far "
            f"({_measure(saved)} after {_measure(best)})"
        )
        if await self.run.restore(best, why) is None:
            return None  # the restore failed (checkpoint.failed): the workspace is as it was
        return told(iteration, saved, best)


def cannot_measure(check: object) -> str:
    """Why a rollback on regression will never happen with `check`."""
    name = type(check).__name__
    how = (
        "build it with AllOf(..., progress=True) so that every part is asked"
        if name == "AllOf"
        else "give it measure(state) -> Assessment (checks.MeasuresProgress), passing on "
        "what the check it wraps measures"
    )
    return (
        f'rollback = "on_regression" will never roll back: the completion check {name} '
        f"cannot measure the progress of the work; {how}"
    )


def told(iteration: int, ended: Checkpoint, best: Checkpoint) -> str:
    """The feedback for the iteration after a rollback: what broke, and what was undone."""
    now, before = ended.progress, best.progress
    assert before is not None
    if now is None:
        what = (
            f"At the end of iteration {iteration} the completion check could not measure the "
            f"work at all, where checkpoint {best.short_id} ({best.label}) had "
            f"{before.describe()} passing."
        )
    else:
        broken = now.broken_since(before)
        names = ", ".join(broken[:_SHOW]) + (
            f" and {len(broken) - _SHOW} more" if len(broken) > _SHOW else ""
        )
        what = (
            f"Iteration {iteration} ended with {now.describe()} passing, where checkpoint "
            f"{best.short_id} ({best.label}) had {before.describe()} passing. "
            + (f"It broke: {names}." if broken else "What broke is not named by the check.")
        )
    return (
        f"{what}\nThe harness rolled the workspace back to checkpoint {best.short_id}: the "
        f"changes of iteration {iteration} are gone from it (they are kept in checkpoint "
        f"{ended.short_id}). Start from the restored workspace, and keep what passes passing "
        "while you fix what is missing."
    )


def _measure(checkpoint: Checkpoint) -> str:
    progress = checkpoint.progress
    return "nothing measured" if progress is None else progress.describe()
