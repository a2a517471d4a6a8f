"""`harness view`: its command line (the handler is `_view.handle`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._handlers import Handler


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "view",
        help="write a run's transcript (or a board's attempts) as self-contained HTML pages",
    )
    parser.add_argument(
        "transcript",
        type=Path,
        help=(
            "the JSONL transcript of a run, a board's folder (with its .board state), or the "
            "stop hooks' state folder (with its verdicts.jsonl)"
        ),
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        help="where to write the page (default: beside it, .html); for a board, the folder for "
        "its pages (default: view/ in its state folder)",
    )
    parser.set_defaults(handler=Handler("._view", "handle"))
