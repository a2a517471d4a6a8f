"""`harness board run DIR`: the task board (`strategies.board`) run from the command line;
`status` and `retry` are in `_board_status`, the grammar of all three in `_board_args`.

This module is imported when `board run` runs, not when the parser is built.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sqlite3
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio
import structlog

from harness import ConfigurationError, HarnessError
from harness.events import EventSink

from ..board._state import BoardView, board_state, one_line
from ._board_status import (
    EXIT_COMPLETE,
    EXIT_ERROR,
    EXIT_NOT_COMPLETE,
    EXIT_STATE,
    _print_table,
    _state_failure,
)
from ._progress._display import ProgressDisplay
from ._progress._open import is_live_terminal, open_progress
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
    )

    from ._telemetry import BoardTracer


class _Writes(Protocol):
    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


class _BoardEventPrinter:
    """Prints each board event as one line on stderr (or on `out`)."""

    def __init__(self, out: _Writes | None = None) -> None:
        self._out = out
        self._start = time.monotonic()

    def emit(self, event: BoardEvent) -> None:

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
    from strategies.board import Board, BoardBusy, BoardStateError
    from strategies.board._errors import STATE_ERRNOS, state_error

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
                except Exception as exc:  # the board's task group: an ExceptionGroup
                    found = _refusal(exc)
                    if found is None:
                        raise
                    refused.append(found)
        return None

    def _refusal(exc: BaseException) -> Exception | None:
        """What in `exc` (an ExceptionGroup from the board's tasks, or a bare OSError) says
        the board cannot go on: its own refusal, or its state folder's disk, which is said
        in one line with exit 3, as documented, never as a traceback."""
        leaves = exc.exceptions if isinstance(exc, BaseExceptionGroup) else (exc,)
        for leaf in leaves:
            if isinstance(leaf, BaseExceptionGroup):
                found = _refusal(leaf)
            elif isinstance(leaf, ConfigurationError | BoardBusy | BoardStateError):
                found = leaf
            elif isinstance(leaf, sqlite3.Error):
                found = state_error(leaf, board_state(args.folder, args.state))
            elif isinstance(leaf, OSError) and leaf.errno in STATE_ERRNOS:
                where = leaf.filename or board_state(args.folder, args.state)
                found = state_error(leaf, Path(where))
            else:
                found = None
            if found is not None:
                return found
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
        with BoardView(board_state(args.folder, args.state)) as view:
            _print_table(view, args.folder, sys.stdout)
    except (HarnessError, sqlite3.Error) as exc:
        return _state_failure(exc, args.folder, args.state)
    return EXIT_COMPLETE if result.complete else EXIT_NOT_COMPLETE
