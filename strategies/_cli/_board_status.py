"""`harness board status DIR` and `harness board retry ID`: a board's database read (or its
failed tasks put back) from the command line, while the board runs or after.

A look at a board is a fresh process: this module imports sqlite3, json and the board's
reader (`strategies.board._state`, `_records`), and neither `harness` nor anyio, nor the
board's engine. `harness` loads only to say what went wrong (its error classes), and
`retry`, which writes, opens the full `BoardStore`.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..board._lock import holder
from ..board._state import BoardView, board_state, one_line
from ._board_args import PER_STATUS
from ._terminal import for_terminal

if TYPE_CHECKING:
    import argparse

    from ..board._records import BoardReader, TaskState

EXIT_COMPLETE = 0
EXIT_NOT_COMPLETE = 1
EXIT_ERROR = 2
EXIT_STATE = 3  # the state folder cannot be used: damaged, read-only, or its disk full

# What `status` lists by default, what needs a person first; complete tasks are only counted,
# and each status shows its first `PER_STATUS` tasks: a board of 10,000 tasks prints a screen,
# read through an index, not 10,000 lines. `--all` lists every task, `--json` has them all.
LISTED = ("review", "failed", "in_progress", "blocked", "pending")


def _refusals() -> tuple[type[Exception], ...]:
    """What a board command reports as a refusal rather than a crash. Called by the ``except``
    clauses below only when something was raised: `harness` loads only then."""
    from harness import HarnessError

    return (HarnessError, OSError, sqlite3.Error)


def _state_failure(exc: Exception, folder: Path, state: Path | None) -> int:
    """Say what is wrong (naming the file and what to do); the exit code that means it. A
    database error read outside a transaction (a damaged page) is a state error too."""
    from ..board._errors import BoardStateError, state_error

    if isinstance(exc, sqlite3.Error):
        exc = state_error(exc, board_state(folder, state) / "board.db")
    print(f"harness board: {for_terminal(exc, lines=True)}", file=sys.stderr)
    return EXIT_STATE if isinstance(exc, BoardStateError) else EXIT_ERROR


def handle_status(args: argparse.Namespace) -> int:
    try:
        with BoardView(board_state(args.folder, args.state)) as board:
            if args.json:
                print(json.dumps(_status_dict(board, args.events), indent=2))
            else:
                _print_table(board, args.folder, sys.stdout, events=args.events, every=args.every)
    except _refusals() as exc:
        return _state_failure(exc, args.folder, args.state)
    return EXIT_COMPLETE


def handle_retry(args: argparse.Namespace) -> int:
    from strategies.board import open_store  # writes: the full store

    try:
        with open_store(board_state(args.board, args.state)) as store:
            became = store.retry(args.ids)
    except _refusals() as exc:
        return _state_failure(exc, args.board, args.state)
    for task, status in zip(args.ids, became, strict=True):
        print(f"{task}: {status}")
    return EXIT_COMPLETE


def _status_dict(store: BoardReader, events: int) -> dict[str, Any]:

    running = holder(store.path.parent)
    tasks = store.tasks()
    costs = store.costs()
    data: dict[str, Any] = {
        "state": str(store.path.parent),
        "running": running,
        "last_run": store.last_run(),
        "counts": store.counts(),
        "cost": store.board_cost().to_dict(),
        "accounts": [a.to_dict() for a in store.paused_accounts()],
        "tasks": [
            {
                **t.to_dict(),
                "interrupted": t.status == "in_progress" and running is None,
                "cost": costs[t.id].to_dict() if t.id in costs else None,
            }
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


def _print_table(
    store: BoardReader, folder: Path, out: TextIO, *, events: int = 0, every: bool = False
) -> None:

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
    from ..board._cost import money

    rows = [("TASK", "STATUS", "ROLE", "PRI", "TRIES", "COST", "TITLE")]
    # Per row: the note under it, or the "and N more" line that follows it.
    notes: list[tuple[str | None, str | None]] = [(None, None)]
    # The listed tasks' costs only (a page of each status), or every task's with --all.
    costs = store.costs(None if every else [t.id for tasks, _, _ in groups for t in tasks])
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
                    money(costs[task.id].spent.cost_usd) if task.id in costs else "-",
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
        widths = [max(len(row[i]) for row in rows) for i in range(6)]
        for row, (note, more_line) in zip(rows, notes, strict=True):
            cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].ljust(widths[2])]
            cells += [row[3].rjust(widths[3]), row[4].rjust(widths[4]), row[5].rjust(widths[5])]
            cells.append(row[6])
            out.write("  ".join(cells).rstrip() + "\n")
            if note:
                out.write(" " * (widths[0] + 2) + f"└ {note}\n")
            if more_line:
                out.write(more_line + "\n")
    total = store.board_cost()
    if total.spent.attempts or total.open_attempts:
        line = f"spent {money(total.spent.cost_usd)} on {total.spent.attempts} attempt(s)"
        if total.open_attempts:
            line += f" (+{total.open_attempts} open)"
        if total.verified_tasks:
            line += (
                f"; {total.verified_tasks} verified: "
                f"{money(total.spent_per_verified_task_usd)} spent per verified task, "
                f"{money(total.mean_verified_task_usd)} each on average"
            )
        out.write(line + "\n")
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
