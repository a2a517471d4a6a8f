"""`WorkspaceMonitor`: one run's view of its workspace, kept current off the event loop.

Sensors and feedback triggers that ask "did the workspace change?" (`NoProgressSensor`,
`ToolUsageFeedback`, a `file_appears` glob) read a monitor the policy opens with the run,
instead of walking the tree every turn. It has two modes:

- **watch** (``pip install 'completion-harness[watch]'``, on a system with native file
  events, inotify on Linux): a `watchfiles` watcher runs in a worker thread; each batch of
  events is looked at there (stat, then a hash only where the stat moved, a new folder
  walked) and only what changed reaches the event loop. A turn costs what changed, not what
  exists, and writes made by any process (a shell, a command-line agent) are seen.
- **walk** (no `watchfiles`, no native events, or the watcher failed): the whole tree is
  walked at each refresh, in a worker thread.

The baseline (a walk that hashes every file) is taken in the worker thread when the run
starts, after the watcher is up, so nothing written meanwhile is missed.

Events arrive a few milliseconds after the write. Each refresh ends a turn by renaming the
marker file in a private folder watched by the same watcher to the turn's token (`turn_end`);
the kernel queues a watcher's events in the order the writes happened, so every write finished
before the rename is logged by the time the rename's batch is handled, and `position(token)`
is then where the turn ends in the log (a subprocess that wrote a file and exited, say). A
batch is a set: a write made after the rename but handed over in the rename's batch is
logged before `position(token)` too, after `batch_start(token)`. A rename, not a new file
per turn: a create costs an inode (twice a rename's CPU on ext4) and three events, and the
file must then be deleted, which the watcher reports in a batch of its own; a rename is two
events in one batch. A turn that must not miss a write calls ``refresh(settle=True)``, which
waits for its marker. Consumers ask for this only when their reading would change the run (a
sensor about to warn or halt, a glob trigger); the others read where earlier turns ended once
their markers have arrived, so most turns do not wait at all. A marker that does not arrive within
`SETTLE_TIMEOUT` seconds (a watcher that cannot keep up) stops the watcher and the monitor
walks from then on.

The worker thread hands nothing to the event loop as it goes: it leaves each batch in an
inbox the loop empties when it next reads (`refresh`, `position`), so a turn that does not
wait costs the loop no wake-up. Only a batch that holds the marker a settling turn waits for
is handed over (`anyio.from_thread`), to wake that turn.

The monitor's worker thread and the watcher's own thread start with the run and end with it
(`open_workspace_monitor`); the private folder is removed.
"""

from __future__ import annotations

import bisect
import collections
import os
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.from_thread
import anyio.to_thread
from attrs import frozen

from harness.extend import LibraryLogger

from ._fingerprint import WorkspaceChanges, WorkspaceScanner
from ._ignore import DEFAULT_IGNORE

log = LibraryLogger("termination.monitor")

Mode = Literal["watch", "walk"]
Kind = Literal["added", "modified", "removed"]
Entry = tuple[Kind, str]

STEP_MS = 5
"""How often the watcher thread looks for new events while there are none (ms)."""
DEBOUNCE_MS = 20
"""The longest a burst of events is gathered before it is handled (ms)."""
SETTLE_TIMEOUT = 2.0
"""Seconds a settling turn waits for its marker before the monitor gives up watching."""
_FIRST_LOOK_MS = 20  # the first wait, after which the watcher is known to be up


@frozen
class MonitorStatistics:
    """What a monitor did: its mode, the files it knows, the batches of changes it applied
    (watch) or the walks it made (walk), and how often a turn waited for pending events."""

    mode: Mode
    files: int
    refreshes: int
    settles: int
    changes: int


class WorkspaceMonitor:
    """A run's workspace: its files, and a log of what changed since the run started.

    `mark` is a position in the log; `since(mark)` is what changed after it, as
    ``(kind, path)`` pairs (kind ``"added"``, ``"modified"`` or ``"removed"``, path relative
    to the workspace, with ``/`` separators). A file rewritten with the same bytes is not
    logged. Open one with `open_workspace_monitor`.
    """

    __slots__ = (
        "_arrivals",
        "_changes",
        "_inbox",
        "_lock",
        "_log",
        "_marker",
        "_private",
        "_refreshes",
        "_scanner",
        "_settles",
        "_stop",
        "_token",
        "_waiters",
        "_wanted",
        "_worker_done",
        "ignore",
        "mode",
        "root",
    )

    def __init__(self, root: Path, ignore: Iterable[str]) -> None:
        self.root = root
        self.ignore = frozenset(ignore)
        self.mode: Mode = "walk"
        self._private = tempfile.mkdtemp(prefix="harness-watch-")
        # The one marker file, renamed to each turn's token; made before the watcher starts.
        self._marker = os.path.join(self._private, "s0")
        with open(self._marker, "wb"):
            pass
        # The marker folder may lie inside the workspace (a workspace of /tmp): never a file.
        self._scanner = WorkspaceScanner(
            root, ignore=(*self.ignore, os.path.basename(self._private))
        )
        self._log: list[tuple[Kind, str]] = []
        self._lock = anyio.Lock()
        self._stop = threading.Event()
        self._worker_done = anyio.Event()
        self._token = 0
        # (highest token handled, log position, where that marker's batch began in the log)
        self._arrivals: list[tuple[int, int, int]] = []
        self._waiters: list[tuple[int, anyio.Event]] = []
        # Filled by the worker thread, emptied on the loop: (changes, highest marker token).
        self._inbox: collections.deque[tuple[list[Entry], int]] = collections.deque()
        self._wanted = 0  # the lowest token a settling turn waits for (0: none); the worker
        # reads it after the marker's rename, which the loop makes after setting it
        self._refreshes = 0
        self._settles = 0
        self._changes = 0

    @property
    def mark(self) -> int:
        """The current end of the change log."""
        return len(self._log)

    def since(self, mark: int) -> Sequence[tuple[Kind, str]]:
        """What changed after `mark`, oldest first."""
        return self._log[mark:]

    def changed_since(self, mark: int, ignore: frozenset[str] | None = None) -> bool:
        """Whether a file changed after `mark`, leaving out paths under a name in `ignore`
        (beyond what the monitor itself ignores)."""
        if ignore is None or ignore <= self.ignore:
            return len(self._log) > mark
        return any(ignore.isdisjoint(path.split("/")) for _, path in self._log[mark:])

    def changed_between(self, start: int, end: int, ignore: frozenset[str]) -> bool:
        """Whether a file changed between the log positions `start` and `end`, leaving out
        paths under a name in `ignore`."""
        if end <= start:
            return False
        if ignore <= self.ignore:
            return True
        return any(ignore.isdisjoint(path.split("/")) for _, path in self._log[start:end])

    @property
    def turn_end(self) -> int:
        """The token of the last refresh's marker: where the turn it ended ends."""
        return self._token

    def post_marker(self) -> int:
        """Mark this point in the watcher's queue without waiting for it; returns the token
        `position` answers for once the marker arrived. Walking, the point is placed at once."""
        self._token += 1
        token = self._token
        if self.mode == "watch":
            self._mark(token)
        else:
            self._arrived(token)
        return token

    def position(self, token: int) -> int | None:
        """The log position where the turn whose refresh posted `token` ended: every write
        finished before that refresh is logged before it. None until the marker arrived.

        A batch holds its events as a set, so it cannot say which of its markers a change
        came before, nor whether a change came after its last marker: its changes count
        before its last marker and after the others. A change that came after the last
        marker (the next turn's, once that turn's tools started before the watcher reported
        the marker) lies between `batch_start(token)` and `position(token)`."""
        arrival = self._arrival(token)
        return None if arrival is None else arrival[1]

    def batch_start(self, token: int) -> int | None:
        """The log position where the batch that brought `token`'s marker began: the changes
        between it and `position(token)` came with the marker, before it or after it. None
        until the marker arrived; walking, the same as `position(token)`."""
        arrival = self._arrival(token)
        return None if arrival is None else arrival[2]

    def _arrival(self, token: int) -> tuple[int, int, int] | None:
        self._drain()
        arrivals = self._arrivals
        i = bisect.bisect_left(arrivals, (token, -1, -1))
        return arrivals[i] if i < len(arrivals) else None

    async def refresh(self, *, settle: bool) -> None:
        """Bring the log up to date for the turn that just ended.

        Watching, this costs nothing unless `settle`, when it waits for the events of every
        write finished before the call. Walking, it walks the tree in a worker thread.
        """
        self._drain()
        if self.mode == "watch":
            if settle:
                await self._settle()
            else:
                self.post_marker()
            return
        self._token += 1
        token = self._token
        await self._worker_done.wait()  # a watcher that gave up has handed over its files
        self._drain()  # what it had looked at, before what the walk finds
        async with self._lock:
            changes = await anyio.to_thread.run_sync(self._scanner.scan_changes)
        self._refreshes += 1
        self._log.extend(_entries(changes))
        self._arrived(token)

    def statistics(self) -> MonitorStatistics:
        self._drain()
        return MonitorStatistics(
            mode=self.mode,
            files=self._scanner.files,
            refreshes=self._refreshes,
            settles=self._settles,
            changes=len(self._log),
        )

    def __repr__(self) -> str:
        return (
            f"WorkspaceMonitor({str(self.root)!r}, mode={self.mode!r}, "
            f"files={self._scanner.files}, changes={len(self._log)})"
        )

    # -- on the event loop --------------------------------------------------------------

    def _drain(self) -> None:
        """Log the batches the worker thread left in the inbox, oldest first."""
        inbox = self._inbox
        while inbox:
            self._deliver(*inbox.popleft())

    def _deliver(self, entries: list[Entry], token: int) -> None:
        """A batch the watcher thread handled: log it, then release the turns it settles."""
        self._refreshes += 1
        start = len(self._log)
        if token > 1 and entries:
            self._arrived(token - 1)  # the batch's earlier markers end before its changes
        self._log.extend(entries)
        if token:
            self._arrived(token, start)
            if self._wanted and token >= self._wanted:
                self._release(lambda t: t <= token)

    def _release(self, settled: Callable[[int], bool]) -> None:
        waiting = self._waiters
        self._waiters = [(t, e) for t, e in waiting if not settled(t)]
        self._wanted = min((t for t, _ in self._waiters), default=0)
        for t, arrived in waiting:
            if settled(t):
                arrived.set()

    def _arrived(self, token: int, start: int | None = None) -> None:
        """`token`'s marker arrived, here in the log, in a batch that began at `start`."""
        arrivals = self._arrivals
        if not arrivals or arrivals[-1][0] < token:
            end = len(self._log)
            arrivals.append((token, end, end if start is None else start))

    async def _settle(self) -> None:
        self._settles += 1
        self._token += 1
        token = self._token
        arrived = anyio.Event()
        self._waiters.append((token, arrived))
        self._wanted = min(self._wanted or token, token)
        self._mark(token)
        with anyio.move_on_after(SETTLE_TIMEOUT):
            await arrived.wait()
            return
        log.warning(
            "workspace.watch_stalled",
            workspace=str(self.root),
            timeout=SETTLE_TIMEOUT,
            action="walking from now on",
        )
        self._give_up()
        await self.refresh(settle=False)

    def _mark(self, token: int) -> None:
        """Rename the marker file to `token` (one rename, which the watcher reports)."""
        renamed = os.path.join(self._private, f"s{token}")
        os.rename(self._marker, renamed)
        self._marker = renamed

    def _give_up(self) -> None:
        self.mode = "walk"
        self._stop.set()
        self._release(lambda t: True)

    # -- in the worker thread -----------------------------------------------------------

    def _work(self, use_watcher: bool, started: Callable[[], object]) -> None:
        """The worker thread: start the watcher, take the baseline, then handle each batch
        until the run ends (or, without a watcher, take the baseline and return)."""
        watcher = self._open_watcher() if use_watcher else None
        first: set[tuple[Any, str]] = set()
        try:
            if watcher is not None:
                try:
                    first = next(watcher)  # returns once the watcher is up
                except StopIteration:  # stopped before it started: the run is over
                    watcher = None
                except Exception as exc:
                    self._unavailable(exc)
                    watcher = None
            self._scanner.scan_changes()  # the baseline, after the watcher is up
            if watcher is not None:
                self.mode = "watch"
            anyio.from_thread.run_sync(started)
            if watcher is None:
                return
            try:
                self._handle(first)
                for batch in watcher:
                    self._handle(batch)
            except Exception as exc:  # the watcher failed mid-run: the loop walks instead
                log.warning(
                    "workspace.watch_failed",
                    workspace=str(self.root),
                    error=f"{type(exc).__name__}: {exc}",
                    action="walking from now on",
                )
                anyio.from_thread.run_sync(self._give_up)
        finally:
            if watcher is not None:
                watcher.close()
            shutil.rmtree(self._private, ignore_errors=True)

    def _open_watcher(self) -> Any:
        try:
            from watchfiles import watch
        except ImportError:
            self._unavailable(None)
            return None
        return watch(
            self.root,
            self._private,
            watch_filter=None,
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            stop_event=self._stop,
            rust_timeout=_FIRST_LOOK_MS,
            yield_on_timeout=True,
            force_polling=False,  # polling could not order the marker after the writes
            raise_interrupt=False,
            ignore_permission_denied=True,
        )

    def _unavailable(self, exc: Exception | None) -> None:
        log.info(
            "workspace.watch_unavailable",
            workspace=str(self.root),
            reason="watchfiles is not installed" if exc is None else f"{type(exc).__name__}: {exc}",
            action="walking at each refresh, in a worker thread",
        )

    def _handle(self, batch: set[tuple[Any, str]]) -> None:
        if not batch:
            return
        private = self._private + os.sep
        token = 0
        touched: set[str] = set()
        for _, path in batch:
            if path.startswith(private):
                # A rename's old name comes with its new one or after it (never ahead of it).
                name = path[len(private) :]
                if name[:1] == "s" and name[1:].isdigit():
                    token = max(token, int(name[1:]))
            elif path != self._private:
                touched.add(path)
        entries = _entries(self._scanner.update(touched)) if touched else []
        if entries or token:
            self._inbox.append((entries, token))
            wanted = self._wanted
            if wanted and token >= wanted:  # a turn waits for this marker: wake it
                anyio.from_thread.run_sync(self._drain)


def _entries(changes: WorkspaceChanges) -> list[Entry]:
    """`changes` as log entries, with ``/`` separators."""
    if not changes:
        return []
    sep = os.sep
    kinds: tuple[tuple[Kind, tuple[str, ...]], ...] = (
        ("added", changes.added),
        ("modified", changes.modified),
        ("removed", changes.removed),
    )
    return [(kind, path.replace(sep, "/")) for kind, paths in kinds for path in paths]


@asynccontextmanager
async def open_workspace_monitor(
    root: Path | str, *, ignore: Iterable[str] = DEFAULT_IGNORE, watch: bool = True
) -> AsyncIterator[WorkspaceMonitor]:
    """Watch `root` for the length of the block (see the module's docstring); with
    ``watch=False``, or where no watcher can run, walk it at each refresh instead.

    Entering takes the baseline, in a worker thread; leaving stops the watcher and waits
    for its thread.
    """
    monitor = WorkspaceMonitor(Path(root), ignore)
    ready = anyio.Event()

    async def work() -> None:
        try:
            await anyio.to_thread.run_sync(
                monitor._work,
                watch,
                ready.set,
                limiter=anyio.CapacityLimiter(1),  # a thread of its own, not the shared pool's
            )
        finally:
            monitor._worker_done.set()
            ready.set()

    async with anyio.create_task_group() as group:
        try:
            group.start_soon(work)
            await ready.wait()
            yield monitor
        finally:
            monitor._stop.set()


__all__ = ["MonitorStatistics", "WorkspaceMonitor", "open_workspace_monitor"]
