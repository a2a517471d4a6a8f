"""`harness stats`: its command line (the handler is `_stats.handle`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._handlers import Handler


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "stats",
        help="the ledger across runs: verified rate, attempts, cost per verified task, why "
        "runs stopped, which checks reject",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="TRANSCRIPT|STATE_DIR",
        help="JSONL transcripts, folders of them, board state folders or boards' folders",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.set_defaults(handler=Handler("._stats", "handle"))
