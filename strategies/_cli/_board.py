"""`harness board run DIR`, `harness board status DIR`, `harness board retry ID`: the task board
(`strategies.board`) from the command line.

The board package is imported when a board command runs, not when the parser is built, so
`harness run` does not pay for it.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sqlite3
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

import anyio
import structlog

from harness import ConfigurationError, EventSink, HarnessError

from ._progress import ProgressDisplay, is_live_terminal, open_progress
from ._run import _Stderr, logging_to_stderr
from ._signals import SignalCancel
from ._terminal import for_terminal

if TYPE_CHECKING:
    from strategies.board import (
        AttemptInfo,
        AttemptOutcome,
        AttemptSpec,
        AttemptWatcher,
        BoardEvent,
        BoardResult,
        BoardStore,
        TaskState,
    )

    from ._telemetry import BoardTracer

EXIT_COMPLETE = 0
EXIT_NOT_COMPLETE = 1
EXIT_ERROR = 2
EXIT_STATE = 3  # the state folder cannot be used: damaged, read-only, or its disk full


def register(sub: Any) -> None:
    board = sub.add_parser("board", help="a folder of tasks worked by a pool of agents")
    commands = board.add_subparsers(dest="board_command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run the board until no task is pending or in progress",
        description="Reads DIR/board.toml (the agents) and DIR/tasks/*.toml (the tasks). Exits "
        "0 when every task is verified complete, 1 when some are not, 2 on a configuration "
        "error or when another board runs on the same state folder.",
    )
    run.add_argument("folder", type=Path, metavar="DIR", help="the board's folder")
    run.add_argument(
        "--agents", type=int, metavar="N", help="agents in the pool (default: one per entry)"
    )
    run.add_argument("--engine", choices=["local", "ray"], default="local")
    run.add_argument(
        "--ray-address", metavar="ADDR", help="a Ray cluster (default: [ray] address, RAY_ADDRESS)"
    )
    _state_option(run)
    run.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    run.add_argument("-q", "--quiet", action="store_true", help="print only the final table")
    run.add_argument("-v", "--verbose", action="store_true", help="log every event of every run")
    run.add_argument(
        "--otel",
        action="store_true",
        help="emit OpenTelemetry spans (one trace for the board's run); the exporter comes from "
        "OTEL_TRACES_EXPORTER (console on stderr by default, or otlp)",
    )
    run.set_defaults(handler=handle_run)

    status = commands.add_parser(
        "status", help="print the counts by status and the tasks that are not complete"
    )
    status.add_argument("folder", type=Path, metavar="DIR", help="the board's folder")
    _state_option(status)
    status.add_argument(
        "--json", action="store_true", help="print JSON instead of a table (every task)"
    )
    status.add_argument(
        "--all",
        action="store_true",
        dest="every",
        help=f"list every task (default: the first {PER_STATUS} of each status that is not "
        "complete; complete tasks are counted)",
    )
    status.add_argument(
        "--events", type=int, default=0, metavar="N", help="also show the last N events"
    )
    status.set_defaults(handler=handle_status)

    retry = commands.add_parser(
        "retry", help="put tasks in review or failed back to pending, with a fresh budget"
    )
    retry.add_argument("ids", nargs="+", metavar="ID", help="task ids")
    retry.add_argument(
        "--board", type=Path, default=Path("."), metavar="DIR", help="the board's folder (.)"
    )
    _state_option(retry)
    retry.set_defaults(handler=handle_retry)


def _state_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state", type=Path, metavar="PATH", help="the board's state folder (default DIR/.board)"
    )


class _Writes(Protocol):
    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


class _BoardEventPrinter:
    """Prints each board event as one line on stderr (or on `out`)."""

    def __init__(self, out: _Writes | None = None) -> None:
        self._out = out
        self._start = time.monotonic()

    def emit(self, event: BoardEvent) -> None:
        from strategies.board._board import one_line

        out = self._out or sys.stderr
        task = event.task or ""
        line = f"{event.kind:<15} {task:<10} {one_line(event.message, 130)}"
        out.write(f"[{time.monotonic() - self._start:7.2f}s] {for_terminal(line)}\n")
        out.flush()


class _Tracking:
    """Gives each running attempt a status line on the live display (an `AttemptWatcher`):
    labelled ``TASK#N``, fed by the attempt's run events, gone when the attempt is over."""

    def __init__(self, progress: ProgressDisplay) -> None:
        self._progress = progress
        self._sinks: dict[AttemptInfo, EventSink] = {}

    def started(self, spec: AttemptSpec) -> list[EventSink]:
        info = spec.info
        sink = self._progress.track(f"{info.task}#{info.attempt}", spec.budget)
        self._sinks[info] = sink
        return [sink]

    def finished(self, spec: AttemptSpec, outcome: AttemptOutcome | None) -> None:
        sink = self._sinks.pop(spec.info, None)
        if sink is not None:
            self._progress.forget(sink)


def handle_run(args: argparse.Namespace) -> int:
    # On a terminal: board events above a live panel with a line per running attempt (the
    # Ray engine's runs happen elsewhere: only the board events). Elsewhere: plain lines.
    live = not args.quiet and is_live_terminal(sys.stderr)
    progress = open_progress(sys.stderr, live=True) if live else None
    with logging_to_stderr(args.verbose, progress):
        return _run(args, progress)


def _run(args: argparse.Namespace, progress: ProgressDisplay | None) -> int:
    from strategies.board import Board, BoardBusy, BoardStateError, board_state
    from strategies.board._schema import state_error

    stderr = _Stderr(progress)
    watchers: list[AttemptWatcher] = []
    if progress is not None and args.engine == "local":
        watchers.append(_Tracking(progress))
    tracer: BoardTracer | None = None
    try:
        if args.otel:
            from ._telemetry import BoardTracer, tracer_provider_from_env

            tracer = BoardTracer(
                tracer_provider_from_env(), folder=str(args.folder), engine=args.engine
            )
            watchers.append(tracer)
        board = Board.from_folder(
            args.folder,
            agents=args.agents,
            state=args.state,
            engine=args.engine,
            ray_address=args.ray_address,
            sinks=[] if args.quiet else [_BoardEventPrinter(stderr)],
            watchers=watchers,
        )
    except ConfigurationError as exc:
        print(f"harness board: {for_terminal(exc, lines=True)}", file=sys.stderr)
        return EXIT_ERROR
    if not args.verbose:
        # The progress lines (or, with -q, the table) already say what the board did.
        board.logger = structlog.wrap_logger(
            structlog.PrintLogger(stderr),  # type: ignore[arg-type]
            wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        )
    # The first SIGINT or SIGTERM stops the board; later ones are ignored until it has.
    watch = SignalCancel()
    refused: list[Exception] = []

    async def go() -> BoardResult | None:
        async with watch.installed() as token:
            with token.scope():
                try:
                    return await board.run()
                except (ConfigurationError, BoardBusy, BoardStateError) as exc:
                    refused.append(exc)
                except sqlite3.Error as exc:  # read outside a transaction: a damaged page
                    refused.append(state_error(exc, board_state(args.folder, args.state)))
        return None

    result: BoardResult | None = None
    try:
        with progress if progress is not None else nullcontext():
            if tracer is not None:
                tracer.start()
            result = anyio.run(go, backend=args.backend)
    finally:
        if tracer is not None:
            tracer.end(result, watch.received.name if watch.received is not None else None)
    if refused:
        print(f"harness board: {for_terminal(refused[0], lines=True)}", file=sys.stderr)
        return EXIT_STATE if isinstance(refused[0], BoardStateError) else EXIT_ERROR
    if watch.received is not None or result is None:
        name = watch.received.name if watch.received is not None else "cancellation"
        print(
            f"harness board: stopped by {name}; the attempts in progress resume on the next run",
            file=sys.stderr,
        )
        return watch.exit_code or 128 + signal.SIGTERM
    try:
        with _store(args.folder, args.state, read_only=True) as store:
            _print_table(store, args.folder, sys.stdout)
    except (HarnessError, sqlite3.Error) as exc:
        return _state_failure(exc, args.folder, args.state)
    return EXIT_COMPLETE if result.complete else EXIT_NOT_COMPLETE


class _store:
    """The board's database for a command, closed after it."""

    def __init__(self, folder: Path, state: Path | None, *, read_only: bool = False) -> None:
        from strategies.board import board_state

        self.state = board_state(folder, state)
        self._read_only = read_only

    def __enter__(self) -> BoardStore:
        from strategies.board import open_store

        self._store = open_store(self.state, read_only=self._read_only)
        return self._store

    def __exit__(self, *exc: object) -> None:
        self._store.close()


def _state_failure(exc: Exception, folder: Path, state: Path | None) -> int:
    """Say what is wrong (naming the file and what to do); the exit code that means it. A
    database error read outside a transaction (a damaged page) is a state error too."""
    from strategies.board import BoardStateError, board_state
    from strategies.board._schema import state_error

    if isinstance(exc, sqlite3.Error):
        exc = state_error(exc, board_state(folder, state) / "board.db")
    print(f"harness board: {for_terminal(exc, lines=True)}", file=sys.stderr)
    return EXIT_STATE if isinstance(exc, BoardStateError) else EXIT_ERROR


def handle_status(args: argparse.Namespace) -> int:
    try:
        with _store(args.folder, args.state, read_only=True) as store:
            if args.json:
                print(json.dumps(_status_dict(store, args.events), indent=2))
            else:
                _print_table(store, args.folder, sys.stdout, events=args.events, every=args.every)
    except (HarnessError, OSError, sqlite3.Error) as exc:
        return _state_failure(exc, args.folder, args.state)
    return EXIT_COMPLETE


def handle_retry(args: argparse.Namespace) -> int:
    try:
        with _store(args.board, args.state) as store:
            became = store.retry(args.ids)
    except (HarnessError, OSError, sqlite3.Error) as exc:
        return _state_failure(exc, args.board, args.state)
    for task, status in zip(args.ids, became, strict=True):
        print(f"{task}: {status}")
    return EXIT_COMPLETE


def _status_dict(store: BoardStore, events: int) -> dict[str, Any]:
    from strategies.board import holder

    running = holder(store.path.parent)
    tasks = store.tasks()
    data: dict[str, Any] = {
        "state": str(store.path.parent),
        "running": running,
        "last_run": store.last_run(),
        "counts": store.counts(),
        "accounts": [a.to_dict() for a in store.paused_accounts()],
        "tasks": [
            {**t.to_dict(), "interrupted": t.status == "in_progress" and running is None}
            for t in tasks
        ],
    }
    if events:
        data["events"] = [e.to_dict() for e in store.events(limit=events)]
    return data


def _printable(text: str) -> str:
    """`text` (an agent's words) with control characters shown as ``?``: data, never a
    terminal escape."""
    return "".join(c if c.isprintable() else "?" for c in text)


def _duration(seconds: float) -> str:
    """``1h 05m``, ``4m 10s``, ``12s``."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


# What `status` lists by default, what needs a person first; complete tasks are only counted,
# and each status shows its first `PER_STATUS` tasks: a board of 10,000 tasks prints a screen,
# read through an index, not 10,000 lines. `--all` lists every task, `--json` has them all.
LISTED = ("review", "failed", "in_progress", "blocked", "pending")
PER_STATUS = 50


def _print_table(
    store: BoardStore, folder: Path, out: TextIO, *, events: int = 0, every: bool = False
) -> None:
    from strategies.board import holder
    from strategies.board._board import one_line

    running = holder(store.path.parent)
    if running:
        state = f"running (pid {running.get('pid')} on {running.get('host')})"
    else:
        state = "not running"
    out.write(f"board {folder} ({store.path.parent}): {state}\n")
    # Each group: its tasks, and how many more of its status are not shown.
    groups: list[tuple[list[TaskState], int, str]] = []
    hidden = 0
    if every:
        groups.append((store.tasks(), 0, ""))
    else:
        recorded = store.recorded_counts()
        for status in LISTED:
            first = store.tasks(status=status, limit=PER_STATUS)
            groups.append((first, recorded[status] - len(first), status))
        hidden = recorded["complete"]
    rows = [("TASK", "STATUS", "ROLE", "PRI", "TRIES", "TITLE")]
    # Per row: the note under it, or the "and N more" line that follows it.
    notes: list[tuple[str | None, str | None]] = [(None, None)]
    for tasks, more, status in groups:
        for task in tasks:
            # Ids, titles and reasons come from task files and agents: escaped, cell by cell,
            # so that the widths are those of what is shown.
            rows.append(
                (
                    for_terminal(task.id),
                    task.status + ("" if task.present else " (file removed)"),
                    for_terminal(task.role),
                    str(task.priority),
                    str(task.attempts),
                    for_terminal(task.title),
                )
            )
            note = task.reason
            if task.status == "in_progress" and running is None:
                note = "interrupted: the board stopped; the next run resumes it"
            elif task.status == "in_progress":
                note = f"with {task.agent}"
            shown = None if task.status == "complete" or not note else one_line(note, 150)
            notes.append((None if shown is None else for_terminal(shown), None))
        if more and tasks:
            notes[-1] = (notes[-1][0], f"... and {more} more {status} (--all lists them)")
    if len(rows) > 1:
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        for row, (note, more_line) in zip(rows, notes, strict=True):
            cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].ljust(widths[2])]
            cells += [row[3].rjust(widths[3]), row[4].rjust(widths[4]), row[5]]
            out.write("  ".join(cells).rstrip() + "\n")
            if note:
                out.write(" " * (widths[0] + 2) + f"└ {note}\n")
            if more_line:
                out.write(more_line + "\n")
    if hidden:
        out.write(f"({hidden} complete not listed: --all lists every task)\n")
    out.write(", ".join(f"{n} {s}" for s, n in store.counts().items() if n) + "\n")
    for account in store.paused_accounts():
        until = account.paused_until
        assert until is not None  # paused
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(until))
        left = max(until - time.time(), 0.0)
        out.write(
            f"account {account.name}: paused until {when} (in {_duration(left)}): "
            f"{_printable(one_line(account.reason or '', 110))}\n"
        )
    for event in store.events(limit=events) if events else []:
        when = time.strftime("%H:%M:%S", time.localtime(event.at))
        line = f"{when}  {event.kind:<15} {event.task or '':<10} {one_line(event.message, 110)}"
        out.write(for_terminal(line) + "\n")
