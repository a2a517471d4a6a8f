"""Asking watchman whether anything in a workspace changed: a warm key without a look at each file.

Any key that looks at each file pays at least a stat per file: git, in C on two cores, takes
69 ms for 100,000 files here. Where the user runs watchman (https://facebook.github.io/watchman/)
and it watches the workspace, watchman already knows what changed. So the content is remembered
with watchman's clock, taken (synced) before the content was computed, and the next key asks
watchman what changed since then.

- Nothing changed, or only files in folders the key leaves out: the content is what it was.
- Anything else, a watch that restarted (a "fresh instance"), an error, or no answer within
  `TIMEOUT`: the content is computed again.

Watchman is never started here (``--no-spawn``) and no watch is added: for a workspace it does
not watch, or on a machine without it, this costs a lookup on PATH or one failed call.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from attrs import frozen

TIMEOUT = 5.0
"""Seconds an answer from watchman may take before the key is computed without it."""
_CANNOT_ASK = (OSError, anyio.BrokenResourceError)


@frozen
class Watch:
    """The watched `root` that holds a workspace, and the workspace's path below it ("" when
    it is the root)."""

    root: str
    relative: str


async def watch_of(workspace: Path, left_out: frozenset[str]) -> Watch | None:
    """The watch that covers `workspace`, or None (no watchman, not running, not watched, or
    configured to ignore a folder that is not one of `left_out`: a change there would go
    unreported)."""
    if shutil.which("watchman") is None:
        return None
    answer = await _ask(["watch-list"])
    roots = answer.get("roots") if answer is not None else None
    if not isinstance(roots, list):
        return None
    real = str(await anyio.Path(workspace).resolve())
    for root in roots:
        if isinstance(root, str) and (real == root or real.startswith(root.rstrip("/") + "/")):
            watch = Watch(root, real[len(root) :].strip("/"))
            return watch if await _reports_everything(watch, left_out) else None
    return None


async def _reports_everything(watch: Watch, left_out: frozenset[str]) -> bool:
    """Whether the watch's configuration (``.watchmanconfig``) ignores only folders named in
    `left_out`."""
    answer = await _ask(["get-config", watch.root])
    config = answer.get("config") if answer is not None else None
    if not isinstance(config, dict):
        return False
    dirs, vcs = config.get("ignore_dirs", []), config.get("ignore_vcs", [".git", ".svn", ".hg"])
    if not isinstance(dirs, list) or not isinstance(vcs, list):
        return False  # a configuration watchman may read otherwise: not trusted
    return all(
        isinstance(d, str) and d.rstrip("/").rsplit("/", 1)[-1] in left_out for d in dirs + vcs
    )


async def clock_of(watch: Watch) -> str | None:
    """Watchman's clock for the watch, once it has seen every change made until now."""
    answer = await _ask(["clock", watch.root, {"sync_timeout": 10_000}])
    clock = answer.get("clock") if answer is not None else None
    return clock if isinstance(clock, str) else None


async def unchanged_since(watch: Watch, clock: str, left_out: frozenset[str]) -> bool:
    """Whether no file in the workspace changed since `clock`, but for files inside folders
    named in `left_out` (at any depth). A folder itself is no content (its files are reported
    one by one, those of a folder removed too)."""
    query: dict[str, Any] = {"since": clock, "fields": ["name", "type"]}
    if watch.relative:
        query["relative_root"] = watch.relative
    answer = await _ask(["query", watch.root, query])
    if answer is None or answer.get("is_fresh_instance") is not False:
        return False
    files = answer.get("files")
    if not isinstance(files, list):
        return False
    return all(_left_out(entry, left_out) for entry in files)


def _left_out(entry: object, left_out: frozenset[str]) -> bool:
    if not isinstance(entry, dict) or not isinstance(name := entry.get("name"), str):
        return False
    return entry.get("type") == "d" or bool(left_out.intersection(name.split("/")[:-1]))


async def _ask(command: Sequence[object]) -> dict[str, Any] | None:
    """Watchman's answer to `command`, or None (an error, no answer in time, no watchman)."""
    with anyio.move_on_after(TIMEOUT):
        done = await _run(command)
        if done is None:
            return None
        try:
            answer = json.loads(done.stdout)
        except ValueError:
            return None
        if done.returncode != 0 or not isinstance(answer, dict) or "error" in answer:
            return None
        return answer
    return None


async def _run(command: Sequence[object]) -> subprocess.CompletedProcess[bytes] | None:
    """``watchman -j`` run with `command` as its input, or None when it cannot be started or
    exits before reading it (a stub, a watchman that cannot find its state folder): anyio
    raises the broken pipe from its task group, in an `ExceptionGroup`."""
    try:
        return await anyio.run_process(
            ["watchman", "--no-spawn", "-j"], input=json.dumps(command).encode(), check=False
        )
    except _CANNOT_ASK:
        return None
    except ExceptionGroup as group:
        if group.split(_CANNOT_ASK)[1] is not None:
            raise
        return None
