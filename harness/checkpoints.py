"""Checkpoints of a workspace, for Python callers: save, list, compare and restore them.

```python
store = await open_checkpoints("repo", series="manual")
saved = await store.save("before the refactor", at=0.0)
...
print((await store.diff(saved)).lines())
await store.restore(saved)
```

In a git work tree a checkpoint is a commit on ``refs/harness/checkpoints/<series>`` (the
user's branch, HEAD, index, stash and hooks are never touched); elsewhere a content-addressed
snapshot in a state folder outside the workspace. A run checkpoints its workspace by itself
(see `strategies.Ralph`); ``harness checkpoints list|diff|restore`` is the command line. The
events a run writes about its checkpoints (`CheckpointSaved`, ...) are in `harness.events`.
"""

import typing

from ._lazy import lazy_exports as _lazy_exports
from ._work_progress import Assessment, WorkProgress

if typing.TYPE_CHECKING:
    from ._checkpoints._base import (
        Checkpoint,
        CheckpointDiff,
        CheckpointError,
        Checkpointing,
        CheckpointKind,
        CheckpointStore,
        NoSuchCheckpoint,
        NotAWorkspace,
        best_checkpoint,
        default_state_dir,
        improves_on,
    )
    from ._checkpoints._git import REF_PREFIX, GitCheckpoints
    from ._checkpoints._open import open_checkpoints
    from ._checkpoints._snapshot import EXCLUDED, SnapshotCheckpoints
    from ._loop._run import CheckpointsTheStart

# The checkpoint machinery loads on first use: `checks` imports `WorkProgress` from here on
# every run, and a run that keeps no checkpoints never needs the rest.
_CHECKPOINTS = [
    "Checkpoint",
    "CheckpointDiff",
    "CheckpointError",
    "CheckpointKind",
    "CheckpointStore",
    "Checkpointing",
    "NoSuchCheckpoint",
    "NotAWorkspace",
    "best_checkpoint",
    "default_state_dir",
    "improves_on",
]
_LAZY = {
    **dict.fromkeys(_CHECKPOINTS, "harness._checkpoints._base"),
    "CheckpointsTheStart": "harness._loop._run",
    "open_checkpoints": "harness._checkpoints._open",
    "REF_PREFIX": "harness._checkpoints._git",
    "GitCheckpoints": "harness._checkpoints._git",
    "EXCLUDED": "harness._checkpoints._snapshot",
    "SnapshotCheckpoints": "harness._checkpoints._snapshot",
}

# The checkpoint events, exported here before `harness.events` was their one door: importable
# from here, with a DeprecationWarning naming their home, until the next release.
_MOVED_TO_EVENTS = ["CheckpointFailed", "CheckpointRestored", "CheckpointSaved"]

__getattr__, __dir__ = _lazy_exports(
    __name__,
    globals(),
    _LAZY,
    moved={name: f"harness.events.{name}" for name in _MOVED_TO_EVENTS},
)

__all__ = [
    "Assessment",
    "Checkpoint",
    "CheckpointDiff",
    "CheckpointError",
    "CheckpointKind",
    "CheckpointStore",
    "Checkpointing",
    "CheckpointsTheStart",
    "EXCLUDED",
    "GitCheckpoints",
    "NoSuchCheckpoint",
    "NotAWorkspace",
    "REF_PREFIX",
    "SnapshotCheckpoints",
    "WorkProgress",
    "best_checkpoint",
    "default_state_dir",
    "improves_on",
    "open_checkpoints",
]
