"""`harness checkpoints list|diff|restore`: the checkpoints runs made of a workspace.

``restore`` first checkpoints the workspace as it is (series ``restore``), so a restore can
itself be undone; it prints that checkpoint's id. Exit codes: 0 done, 1 ``diff`` found
differences, 2 an error (no such checkpoint, not a workspace, git failing).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import anyio

from harness.checkpoints import Checkpoint, CheckpointError, CheckpointStore, open_checkpoints

EXIT_OK, EXIT_DIFFERENT, EXIT_ERROR = 0, 1, 2
RESTORE_SERIES = "restore"
_CALENDAR = 1e9  # seconds: 2001; a run's own clock never reaches that


def handle(args: argparse.Namespace) -> int:
    try:
        return anyio.run(_ACTIONS[args.action], args)
    except (CheckpointError, OSError) as exc:
        print(f"harness: {printable(str(exc))}", file=sys.stderr)
        return EXIT_ERROR


async def _store(args: argparse.Namespace, series: str = RESTORE_SERIES) -> CheckpointStore:
    return await open_checkpoints(args.workspace, series=series, state_dir=args.state_dir)


async def _list(args: argparse.Namespace) -> int:
    store = await _store(args)
    found = await store.checkpoints(args.series)
    if args.json:
        for checkpoint in found:
            print(json.dumps(checkpoint.to_dict(), sort_keys=True))
        return EXIT_OK
    if not found:
        print(f"no checkpoints of {printable(str(store.workspace))!r} ({store.kind})")
        return EXIT_OK
    for checkpoint in found:
        print(_line(checkpoint))
    return EXIT_OK


async def _diff(args: argparse.Namespace) -> int:
    store = await _store(args)
    old = await store.find(args.checkpoint)
    new = await store.find(args.other) if args.other is not None else None
    changes = await store.diff(old, new)
    for line in changes.lines():
        print(printable(line))
    return EXIT_OK if changes.empty else EXIT_DIFFERENT


async def _restore(args: argparse.Namespace) -> int:
    store = await _store(args)
    target = await store.find(args.checkpoint)
    safety = await store.save(f"before restoring {target.short_id}", at=time.time())
    changes = await store.restore(target)
    for line in changes.lines():
        print(printable(line))
    print(f"restored {target.describe()}")
    print(f"the workspace as it was is checkpoint {safety.short_id} (series {safety.series})")
    return EXIT_OK


def _line(checkpoint: Checkpoint) -> str:
    progress = checkpoint.progress
    measured = f"  [{progress.describe()}]" if progress is not None else ""
    return printable(
        f"{checkpoint.short_id}  {checkpoint.series} #{checkpoint.seq}  "
        f"{_when(checkpoint.at)}  {checkpoint.label}{measured}"
    )


def _when(at: float) -> str:
    """A run's checkpoint is timed on the run's clock; one this command made, by the calendar."""
    if at < _CALENDAR:
        return f"{at:8.1f}s"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def printable(text: str) -> str:
    """`text` safe for a terminal: control characters (an escape sequence in a file name a
    run's agent chose, say) are shown as ``\\x1b``-style escapes."""
    return "".join(
        c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


_ACTIONS = {"list": _list, "diff": _diff, "restore": _restore}
