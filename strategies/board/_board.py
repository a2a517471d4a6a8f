"""`Board`: a pool of agents working through a folder of tasks until each is complete,
waiting for a person (review) or failed, with every change in the board's database.

One run of a board: take the state folder's lock, bring the database in line with the task
files (closing what a dead board left open), then start the pool. Each agent takes the
highest-priority pending task of its role, runs one attempt through the engine and records
the outcome; a completed task unblocks its dependents; an agent with nothing to take waits
for a change. The run ends when no task is pending or in progress.
"""

from __future__ import annotations

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

from harness import (
    CheckFailed,
    ConfigurationError,
    Event,
    EventSink,
    IterationStarted,
    JsonlTranscript,
    VerdictReached,
)
from harness.extend import EventStream, LibraryLogger, stream_events

from ._attempt import AttemptOutcome, AttemptSpec, AttemptWatcher
from ._board_config import (
    BOARD_FILE,
    TASKS_FOLDER,
    Agent,
    AttemptInfo,
    BoardSettings,
    Seat,
    load_config,
    pool,
)
from ._engine import Engine, LocalEngine
from ._events import BoardEvent, BoardSink, StructlogBoardSink
from ._lock import BoardLock
from ._records import TaskState
from ._store import FINISHED, BoardStore, Claim
from ._tasks import BoardConfigError, BoardTask, check_graph, load_tasks
from ._worktree import GitError, Worktree, Worktrees, repository_of
from ._writer import Writer

STATE_FOLDER = ".board"
_log = LibraryLogger("harness.board")
DATABASE = "board.db"


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
            sinks=sinks,
            watchers=watchers,
        )

    async def run(self, *, sinks: Sequence[BoardSink] = ()) -> BoardResult:
        """Run until no task is pending or in progress; returns how the tasks stand.

        Raises `BoardBusy` when another board runs on the same state folder, and a
        `BoardConfigError` (nothing runs) when a task that has to run has a role no agent has.
        """
        started = time.monotonic()
        owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        lock = BoardLock(self.state)
        lock.acquire(owner)
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
                if self.settings.workspace_template is not None:
                    await anyio.to_thread.run_sync(
                        _materialize, self.settings.workspace_template, self.state / "workspace"
                    )
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

    async def _serve(
        self, store: BoardStore, owner: str, publish: Callable[[list[BoardEvent]], None]
    ) -> None:
        writer = Writer(store, publish)
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
        try:
            try:
                outcome = await self.engine.run_attempt(
                    spec, _Recorder(transcript, writer, store, owner, claim).emit
                )
            finally:
                transcript.close()
            if tree is not None and self._worktrees is not None:
                outcome = await self._worktrees.settle(tree, outcome)
            return outcome
        finally:
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


class _Recorder:
    """Writes an attempt's events to its transcript as they happen (line by line, flushed),
    and records in the event log each claim of done that was sent back."""

    def __init__(
        self,
        transcript: JsonlTranscript,
        writer: Writer,
        store: BoardStore,
        owner: str,
        claim: Claim,
    ) -> None:
        self._file = transcript
        self._writer = writer
        self._store = store
        self._owner = owner
        self._claim = claim
        self._working = False

    def emit(self, row: dict[str, Any]) -> None:
        self._file.write_row(row)
        match Event.from_dict(row):
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


def one_line(text: object, width: int = 200) -> str:
    """`text` on one line of at most `width` characters: its first and last lines, which
    for a check's reason are the headline and the end of the output."""
    lines = [" ".join(line.split()) for line in str(text or "").splitlines() if line.strip()]
    line = lines[0] if len(lines) < 2 else f"{lines[0]} … {lines[-1]}"
    return line if len(line) <= width else line[: width - 1] + "…"


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


def board_state(folder: str | Path, state: str | Path | None = None) -> Path:
    """Where the board in `folder` keeps its state: `state`, or ``folder/.board``."""
    return Path(state) if state is not None else Path(folder) / STATE_FOLDER


def open_store(state: Path) -> BoardStore:
    """The database of an existing board (for status and retry)."""
    path = state / DATABASE
    if not path.is_file():
        raise BoardConfigError(
            f"{path}: no board database (has the board run yet? `harness board run` makes it; "
            f"the folder needs a {BOARD_FILE} and a {TASKS_FOLDER}/ folder)"
        )
    return BoardStore(path)
