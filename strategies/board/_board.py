"""`Board`: a pool of agents working through a folder of tasks until each is complete,
waiting for a person (review) or failed, with every change in the board's database.

One run of a board: take the state folder's lock, bring the database in line with the task
files (closing what a dead board left open), then start the pool. Each agent takes the
highest-priority pending task of its role, runs one attempt through the engine and records
the outcome; a completed task unblocks its dependents; an agent with nothing to take waits
for a change. The run ends when no task is pending or in progress.

Accounts: each agent draws on an account (`Agent.account`). When an attempt's run pauses for
a usage limit (``run.paused``), the board records the account as paused until the reset, stops
every other attempt on the account (each goes back to pending, ``task.paused``, and resumes
where it was, without charging an attempt) and starts no new attempt on it; the attempt that
met the limit waits inside its run and carries on after the reset (``run.resumed``), when the
account works again. Agents on other accounts keep working. The pause is in the database, so
a board started again before the reset waits for it too. A quota that is gone (a terminal
limit: spent credits, an organisation's monthly cap) names no reset: the account pauses for
`TERMINAL_PAUSE`, then tries again (someone may have added credits), rather than take the
task again at once.
"""

from __future__ import annotations

import math
import os
import secrets
import shutil
import socket
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
from attrs import define, evolve, field, frozen

from harness import ConfigurationError
from harness.events import (
    CheckFailed,
    Event,
    EventSink,
    EventStream,
    IterationStarted,
    JsonlTranscript,
    RunPaused,
    RunResumed,
    VerdictReached,
    stream_events,
)
from harness.extend import LibraryLogger

from ._attempt import AttemptOutcome, AttemptSpec, AttemptWatcher
from ._board_config import (
    Agent,
    AttemptInfo,
    BoardSettings,
    Seat,
    load_config,
    pool,
)
from ._engine import Engine, LocalEngine
from ._errors import STATE_ERRNOS as _STATE_ERRNOS
from ._errors import BoardConfigError, state_error
from ._events import BoardEvent, BoardSink, StructlogBoardSink
from ._lock import BoardLock
from ._records import TaskState
from ._state import (
    DATABASE,
    STATE_FOLDER,
    TASKS_FOLDER,
    existing_database,
    one_line,
)
from ._store import FINISHED, BoardStore, Claim
from ._tasks import BoardTask, check_graph, load_tasks
from ._worktree import GitError, Worktree, Worktrees, repository_of
from ._writer import Writer

TERMINAL_PAUSE = 6 * 3600.0
"""Six hours: how long an account whose quota is gone (a terminal usage limit, which names no
reset) is paused before the board tries it again."""

_log = LibraryLogger("harness.board")


@frozen
class BoardResult:
    """How a run of the board left the tasks."""

    counts: dict[str, int]
    tasks: tuple[TaskState, ...]
    elapsed: float

    @property
    def complete(self) -> bool:
        """True when every task of the board is complete (verified)."""
        present = [t for t in self.tasks if t.present]
        return bool(present) and all(t.status == "complete" for t in present)

    def status_of(self, task: str) -> str:
        status: str = next(t.status for t in self.tasks if t.id == task)
        return status


def _tasks(value: Sequence[BoardTask]) -> tuple[BoardTask, ...]:
    return tuple(value)


def _agents(value: Sequence[Agent]) -> tuple[Agent, ...]:
    return tuple(value)


@define(kw_only=True, eq=False)
class Board:
    """Runs `tasks` with a pool of `size` agents (default: one per entry of `agents`, which
    take turns filling the seats), keeping its state in the folder `state`."""

    tasks: tuple[BoardTask, ...] = field(converter=_tasks)
    agents: tuple[Agent, ...] = field(converter=_agents)
    state: Path = field(converter=Path)
    size: int | None = None
    settings: BoardSettings = field(factory=BoardSettings)
    engine: Engine = field(factory=LocalEngine)
    sinks: Sequence[BoardSink] = ()
    watchers: Sequence[AttemptWatcher] = ()
    logger: Any = None
    _seats: tuple[Seat, ...] = field(init=False, repr=False)
    _by_id: dict[str, BoardTask] = field(init=False, repr=False)
    _changed: anyio.Event | None = field(init=False, default=None, repr=False)
    _worktrees: Worktrees | None = field(init=False, default=None, repr=False)
    _paused: dict[str, float] = field(init=False, factory=dict, repr=False)
    """Account -> Unix time its pause ends."""
    _running: dict[str, dict[tuple[str, int], anyio.CancelScope]] = field(
        init=False, factory=dict, repr=False
    )
    """Account -> the attempts running on it, each with the scope that stops it."""
    _writer: Writer | None = field(init=False, default=None, repr=False)
    _store: BoardStore | None = field(init=False, default=None, repr=False)
    _owner: str = field(init=False, default="", repr=False)

    def __attrs_post_init__(self) -> None:
        problems = check_graph(self.tasks)
        if problems:
            raise BoardConfigError("\n".join(problems))
        if not isinstance(self.engine, Engine):
            raise ConfigurationError(f"'engine' must be an Engine (got {self.engine!r})")
        self._seats = pool(self.agents, self.size)
        self._by_id = {t.id: t for t in self.tasks}

    @classmethod
    def from_folder(
        cls,
        folder: str | Path,
        *,
        agents: int | None = None,
        state: str | Path | None = None,
        engine: Engine | Literal["local", "ray"] = "local",
        ray_address: str | None = None,
        sinks: Sequence[BoardSink] = (),
        watchers: Sequence[AttemptWatcher] = (),
    ) -> Board:
        """The board in `folder`: ``board.toml`` and ``tasks/*.toml``; its state goes to
        ``folder/.board`` unless `state` says otherwise."""
        root = Path(folder)
        config = load_config(root)
        tasks = load_tasks(root / TASKS_FOLDER)
        if engine == "ray":
            from ._ray import RayEngine

            engine = RayEngine(ray_address or config.ray.address, num_cpus=config.ray.num_cpus)
        elif engine == "local":
            engine = LocalEngine()
        return cls(
            tasks=tasks,
            agents=config.agents,
            state=Path(state) if state is not None else root / STATE_FOLDER,
            size=agents,
            settings=config.settings,
            engine=engine,
            sinks=(*config.notify, *sinks),
            watchers=watchers,
        )

    async def run(self, *, sinks: Sequence[BoardSink] = ()) -> BoardResult:
        """Run until no task is pending or in progress; returns how the tasks stand.

        Raises `BoardBusy` when another board runs on the same state folder, a
        `BoardConfigError` (nothing runs) when a task that has to run has a role no agent has,
        and a `BoardStateError` when the state folder cannot be used (its database damaged,
        the folder read-only, its disk full): the board stops, and what it had recorded stays.
        """
        started = time.monotonic()
        owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        lock = BoardLock(self.state)
        try:
            lock.acquire(owner)
        except OSError as exc:
            raise state_error(exc, Path(exc.filename or lock.path)) from None
        try:
            store = BoardStore(
                self.state / DATABASE,
                synchronous=self.settings.synchronous,
                transcripts=self.state / "transcripts",
            )
            try:
                everyone: list[BoardSink] = [StructlogBoardSink(self.logger), *self.sinks, *sinks]

                def publish(events: list[BoardEvent]) -> None:
                    for event in events:
                        for sink in tuple(everyone):
                            try:
                                sink.emit(event)
                            except Exception:  # the board's state is safe; the sink is not
                                _log.exception("board.sink.failed", sink=repr(sink))
                                everyone.remove(sink)

                await self._wait_for_leases(store)
                await self._open_worktrees()
                await anyio.to_thread.run_sync(self._start, store, owner)
                self._paused = await anyio.to_thread.run_sync(self._load_pauses, store, owner)
                if self.settings.workspace_template is not None:
                    try:
                        await anyio.to_thread.run_sync(
                            _materialize,
                            self.settings.workspace_template,
                            self.state / "workspace",
                        )
                    except OSError as exc:
                        raise state_error(exc, Path(exc.filename or self.state)) from None
                publish(store.take_events())
                try:
                    await self._serve(store, owner, publish)
                except ExceptionGroup as group:
                    if len(group.exceptions) == 1:
                        raise group.exceptions[0] from None
                    raise
                tasks = await anyio.to_thread.run_sync(store.tasks)
                counts = await anyio.to_thread.run_sync(store.counts)
            finally:
                store.close()
        finally:
            lock.release()
        return BoardResult(counts, tuple(tasks), time.monotonic() - started)

    def stream(self) -> AbstractAsyncContextManager[EventStream[BoardEvent, BoardResult]]:
        """Run the board in the background and iterate its events as they are recorded.

        Leaving the block early cancels the run (its attempts resume on the next run).
        After the events are exhausted, `stream.result` holds the `BoardResult`.
        """
        return stream_events(lambda sink: self.run(sinks=[sink]), what="board")

    # --- the run -----------------------------------------------------------------------------

    async def _wait_for_leases(self, store: BoardStore) -> None:
        """An attempt a dead board left on Ray may still be running until Ray notices: wait
        until its lease (its last heartbeat plus `lease`) has run out."""
        open_attempts = await anyio.to_thread.run_sync(store.open_attempts)
        until = max(
            (a.heartbeat_at + self.settings.lease for a in open_attempts if a.engine != "local"),
            default=0.0,
        )
        if until > time.time():
            await anyio.sleep(until - time.time())

    async def _open_worktrees(self) -> None:
        """With ``isolation = "worktree"``: check that every task works in a git repository
        (a `BoardConfigError` before anything runs) and clean what a dead board left."""
        self._worktrees = None
        if self.settings.isolation != "worktree":
            return
        repos: set[Path] = set()
        for task in self.tasks:
            workspace = task.spec.workspace or self.settings.workspace
            if workspace is None or task.spec.workspace_template is not None:
                raise BoardConfigError(
                    f'{task.path}: [board] isolation = "worktree" needs the task to work in '
                    "a git repository: set [board] workspace or the task's workspace"
                )
            repos.add(await repository_of(workspace))
        worktrees = Worktrees(self.state / "worktrees")
        await worktrees.clean(sorted(repos))
        self._worktrees = worktrees

    def _start(self, store: BoardStore, owner: str) -> None:
        store.start(
            self.tasks,
            owner=owner,
            pid=os.getpid(),
            host=socket.gethostname(),
            engine=self.engine.name,
            agents=len(self._seats),
            roles={seat.agent.role for seat in self._seats},
            max_attempts=self.settings.max_attempts,
        )

    def _load_pauses(self, store: BoardStore, owner: str) -> dict[str, float]:
        """The accounts still paused (a pause whose reset passed while no board ran is over)."""
        now = time.time()
        paused = {}
        for account in store.paused_accounts():
            assert account.paused_until is not None
            if account.paused_until > now:
                paused[account.name] = account.paused_until
            else:
                store.resume_account(owner, account.name, "its reset time has passed")
        return paused

    async def _serve(
        self, store: BoardStore, owner: str, publish: Callable[[list[BoardEvent]], None]
    ) -> None:
        writer = Writer(store, publish)
        self._writer, self._store, self._owner = writer, store, owner
        self._changed = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(writer.serve)
            try:
                async with self.engine.open(), anyio.create_task_group() as beat:
                    beat.start_soon(self._heartbeat, writer, store, owner)
                    async with anyio.create_task_group() as seats:
                        for seat in self._seats:
                            seats.start_soon(self._seat, writer, store, owner, seat)
                    beat.cancel_scope.cancel()
                await writer.call(store.end, owner)
            finally:
                writer.close()

    async def _heartbeat(self, writer: Writer, store: BoardStore, owner: str) -> None:
        while True:
            await anyio.sleep(self.settings.heartbeat)
            await writer.call(store.heartbeat, owner)

    def _notify(self) -> None:
        assert self._changed is not None
        self._changed.set()
        self._changed = anyio.Event()

    async def _seat(self, writer: Writer, store: BoardStore, owner: str, seat: Seat) -> None:
        while True:
            changed = self._changed
            assert changed is not None
            paused_for = self._paused_for(seat.agent.account)
            if paused_for > 0:  # no new attempt on a paused account
                if await self._nothing_left(writer, store):
                    self._notify()
                    return
                with anyio.move_on_after(paused_for):
                    await changed.wait()
                continue
            claim = await writer.call(
                store.claim, owner, seat.name, seat.agent.role, self.engine.name
            )
            if claim == FINISHED:
                self._notify()
                return
            if not isinstance(claim, Claim):
                with anyio.move_on_after(self.settings.poll):
                    await changed.wait()
                continue
            outcome = await self._attempt(writer, store, owner, seat, claim)
            await writer.call(store.finish, owner, claim, outcome, self.settings.max_attempts)
            halt = outcome.halt or {}
            if halt.get("type") == "UsageLimitReached":  # the run would not wait this long
                wait = halt.get("wait")
                seconds = float(wait) if isinstance(wait, int | float) else 0.0
                if halt.get("cause") == "terminal" or not math.isfinite(seconds):
                    seconds = TERMINAL_PAUSE  # no reset named: try again in a while
                self._pause_account(seat.agent.account, seconds, outcome.message, claim)
            self._notify()

    async def _nothing_left(self, writer: Writer, store: BoardStore) -> bool:
        """True when no task is pending or in progress: a paused seat need not wait."""
        counts = await writer.call(store.counts)
        return counts["pending"] == 0 and counts["in_progress"] == 0

    # --- accounts ----------------------------------------------------------------------------

    def _paused_for(self, account: str) -> float:
        """Seconds until `account`'s pause ends (0 when it works); a pause whose time has
        come ends here."""
        until = self._paused.get(account)
        if until is None:
            return 0.0
        left = until - time.time()
        if left <= 0:
            self._resume_account(account, "its reset time has passed")
            return 0.0
        return left

    def _pause_account(
        self, account: str, seconds: float, reason: str, claim: Claim | None = None
    ) -> None:
        """Pause `account` for `seconds`: stop its other running attempts (they resume later)
        and start none on it until then. Called on the board's loop; does not block."""
        assert self._writer is not None, "the board is not running"
        assert self._store is not None
        until = time.time() + max(seconds, 0.0)
        self._paused[account] = max(self._paused.get(account, 0.0), until)
        self._writer.post(self._store.pause_account, self._owner, account, until, reason, claim)
        spared = None if claim is None else (claim.task, claim.number)
        for key, scope in self._running.get(account, {}).items():
            if key != spared:
                scope.cancel()
        self._notify()

    def _resume_account(self, account: str, why: str) -> None:
        """`account` works again (a no-op when it was not paused)."""
        if self._paused.pop(account, None) is None:
            return
        assert self._writer is not None, "the board is not running"
        assert self._store is not None
        self._writer.post(self._store.resume_account, self._owner, account, why)
        self._notify()

    async def _attempt(
        self, writer: Writer, store: BoardStore, owner: str, seat: Seat, claim: Claim
    ) -> AttemptOutcome:
        task = self._by_id[claim.task]
        info = AttemptInfo(task.id, claim.number, seat.name, seat.agent.role)
        try:
            # One trip to a thread for the file system: the workspace (maybe a copy to make)
            # and the transcript, whose creation can take a millisecond on a slow disk.
            workspace, transcript = await anyio.to_thread.run_sync(self._files_for, task, claim)
        except (OSError, ConfigurationError) as exc:
            if isinstance(exc, OSError) and exc.errno in _STATE_ERRNOS:  # the state's fault
                raise state_error(exc, Path(exc.filename or self.state)) from None
            return AttemptOutcome("failed", f"the workspace could not be prepared: {exc}")
        tree: Worktree | None = None
        if self._worktrees is not None and workspace is not None:
            try:
                tree = await self._worktrees.open(workspace, task.id, claim.number)
            except (GitError, BoardConfigError, OSError) as exc:
                transcript.close()
                return AttemptOutcome("failed", f"the worktree could not be made: {exc}")
            workspace = tree.workspace
        spec = AttemptSpec(
            info=info,
            file=task.path,
            table=task.table,
            body=task.body,
            model=seat.agent.model_for(info),
            model_base=seat.agent.base,
            workspace=workspace,
            carry=claim.carry,
            check_first=claim.number > 1,
            spec=task.spec,
        )
        spec = evolve(spec, sinks=self._watch(spec))
        outcome: AttemptOutcome | None = None
        account = seat.agent.account
        running = self._running.setdefault(account, {})
        key = (claim.task, claim.number)
        recorder = _Recorder(transcript, writer, store, owner, claim, self, account)
        try:
            try:
                with anyio.CancelScope() as scope:
                    running[key] = scope
                    outcome = await self.engine.run_attempt(spec, recorder.emit)
            finally:
                transcript.close()
            if outcome is None:  # stopped by `_pause_account`
                outcome = AttemptOutcome(
                    "paused", f"paused: the account {account} is at its usage limit"
                )
            if tree is not None and self._worktrees is not None:
                outcome = await self._worktrees.settle(tree, outcome)
            return outcome
        finally:
            running.pop(key, None)
            for watcher in self.watchers:
                try:
                    watcher.finished(spec, outcome)
                except Exception:  # a display or a tracer must not take the board down
                    _log.exception("board.watcher.failed", watcher=repr(watcher))

    def _watch(self, spec: AttemptSpec) -> tuple[EventSink, ...]:
        sinks: list[EventSink] = []
        for watcher in self.watchers:
            try:
                sinks.extend(watcher.started(spec))
            except Exception:
                _log.exception("board.watcher.failed", watcher=repr(watcher))
        return tuple(sinks)

    def _files_for(self, task: BoardTask, claim: Claim) -> tuple[Path | None, JsonlTranscript]:
        workspace = self._workspace_for(task)
        claim.transcript.parent.mkdir(parents=True, exist_ok=True)
        return workspace, JsonlTranscript(claim.transcript)

    def _workspace_for(self, task: BoardTask) -> Path | None:
        """The folder the task works in: its own, a copy of its template kept in the state
        folder, or the board's (its own, or its template's one shared copy)."""
        spec = task.spec
        if spec.workspace is not None:
            return spec.workspace
        if spec.workspace_template is not None:
            return _materialize(spec.workspace_template, self.state / "workspaces" / task.id)
        if self.settings.workspace is not None:
            return self.settings.workspace
        if self.settings.workspace_template is not None:
            return _materialize(self.settings.workspace_template, self.state / "workspace")
        return None


# The events `_Recorder` acts on; an attempt's other events are only written down.
_NOTED = frozenset(
    kind.name for kind in (RunPaused, RunResumed, IterationStarted, CheckFailed, VerdictReached)
)


class _Recorder:
    """Writes an attempt's events to its transcript as they happen (line by line, flushed),
    records in the event log each claim of done that was sent back, and tells the board when
    the run pauses for its account's usage limit and resumes."""

    def __init__(
        self,
        transcript: JsonlTranscript,
        writer: Writer,
        store: BoardStore,
        owner: str,
        claim: Claim,
        board: Board,
        account: str,
    ) -> None:
        self._file = transcript
        self._writer = writer
        self._store = store
        self._owner = owner
        self._claim = claim
        self._board = board
        self._account = account
        self._working = False

    def emit(self, row: dict[str, Any]) -> None:
        self._file.write_row(row)
        if row.get("event") not in _NOTED:  # most events: only the transcript's, not parsed
            return
        match Event.from_dict(row):
            case RunPaused(source=source, message=text, wait=wait):
                why = f"{source}: {one_line(text)}"
                self._board._pause_account(self._account, wait, why, self._claim)
                return
            case RunResumed():
                self._board._resume_account(self._account, f"{self._claim.task} carries on")
                return
            case IterationStarted():
                self._working = True
                return
            case CheckFailed(reason=reason) if self._working:  # not the check before turn 1
                message = f"the check sent the claim back: {one_line(reason)}"
            case VerdictReached(passed=False, reasons=reasons):
                message = f"the evaluator failed the work: {one_line(reasons)}"
            case _:
                return
        self._writer.post(self._store.note, self._owner, self._claim, "task.rejected", message)


def _materialize(template: Path, target: Path) -> Path:
    """`target`, a copy of `template` made once (copied aside, then renamed into place, so a
    crash never leaves half a copy there)."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    shutil.copytree(template, staging)
    try:
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not target.is_dir():
            raise
    return target


def open_store(state: Path, *, read_only: bool = False) -> BoardStore:
    """The database of an existing board (for retry); `read_only` to look at it only (it may
    then be in a read-only folder). `harness board status` reads through a `BoardView`."""
    return BoardStore(existing_database(state), read_only=read_only)
