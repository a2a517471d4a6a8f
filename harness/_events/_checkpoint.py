"""The events of checkpoints (`harness.checkpoints`): one saved, one restored, one that failed."""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from .._errors import ConfigurationError
from .._work_progress import WorkProgress
from ._base import Event, Fields, omitted, reads


@frozen
class CheckpointSaved(Event):
    """The workspace was checkpointed (`harness.checkpoints`): at the run's start, at the end
    of a Ralph iteration, at a rejected claim. `checkpoint` is its id, `tree` its content;
    `progress` what the completion check measured on it, when it did."""

    name: ClassVar[str] = "checkpoint.saved"
    level: ClassVar[str] = "debug"
    label: str
    checkpoint: str
    tree: str
    seq: int
    kind: str
    progress: WorkProgress | None = None


@frozen
class CheckpointRestored(Event):
    """The workspace was put back to checkpoint `checkpoint` (`label` is that checkpoint's);
    `reason` says why; `added`/`modified`/`deleted` count the files the restore changed."""

    name: ClassVar[str] = "checkpoint.restored"
    checkpoint: str
    label: str
    reason: str = field(metadata=omitted(""))
    added: int = field(metadata=omitted(0))
    modified: int = field(metadata=omitted(0))
    deleted: int = field(metadata=omitted(0))


@frozen
class CheckpointFailed(Event):
    """A checkpoint could not be saved or restored; the run goes on without it."""

    name: ClassVar[str] = "checkpoint.failed"
    level: ClassVar[str] = "warning"
    label: str
    error: str


@reads(WorkProgress)
def _progress(f: Fields) -> WorkProgress:
    failing = f.get("failing", list, "a list of names", ())
    for index, name in enumerate(failing):
        if not isinstance(name, str):
            raise f.error(f"failing[{index}]", f"expected a string (got {name!r:.60})")
    try:
        return WorkProgress(
            f.integer("done"), f.integer("total"), f.text("unit", "items"), tuple(failing)
        )
    except ConfigurationError as exc:
        raise f.error("done", str(exc)) from None
