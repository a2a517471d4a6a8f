"""`harness board run|status|retry`: their command line (the handlers: `_board.handle_run`,
`_board_status.handle_status` and `handle_retry`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._handlers import Handler

# `status` lists the first `PER_STATUS` tasks of each status that is not complete.
PER_STATUS = 50


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
    run.set_defaults(handler=Handler("._board_run", "handle_run"))

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
    status.set_defaults(handler=Handler("._board_status", "handle_status"))

    retry = commands.add_parser(
        "retry", help="put tasks in review or failed back to pending, with a fresh budget"
    )
    retry.add_argument("ids", nargs="+", metavar="ID", help="task ids")
    retry.add_argument(
        "--board", type=Path, default=Path("."), metavar="DIR", help="the board's folder (.)"
    )
    _state_option(retry)
    retry.set_defaults(handler=Handler("._board_status", "handle_retry"))


def _state_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state", type=Path, metavar="PATH", help="the board's state folder (default DIR/.board)"
    )
