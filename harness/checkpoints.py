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
(see `strategies.Ralph`); ``harness checkpoints list|diff|restore`` is the command line.
"""

from ._checkpoints import (
    Checkpoint,
    CheckpointDiff,
    CheckpointError,
    CheckpointKind,
    CheckpointStore,
    NoSuchCheckpoint,
    NotAWorkspace,
    default_state_dir,
    open_checkpoints,
)
from ._git_checkpoints import REF_PREFIX, GitCheckpoints
from ._snapshot_checkpoints import EXCLUDED, SnapshotCheckpoints
from ._work_progress import WorkProgress

__all__ = [
    "Checkpoint",
    "CheckpointDiff",
    "CheckpointError",
    "CheckpointKind",
    "CheckpointStore",
    "EXCLUDED",
    "GitCheckpoints",
    "NoSuchCheckpoint",
    "NotAWorkspace",
    "REF_PREFIX",
    "SnapshotCheckpoints",
    "WorkProgress",
    "default_state_dir",
    "open_checkpoints",
]
