"""`harness init [FOLDER]`: its command line (the handler is `_init.handle`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._handlers import Handler


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "init",
        help="write a commented starter spec that runs (a scripted model, a workspace, a check)",
    )
    parser.add_argument(
        "folder",
        type=Path,
        nargs="?",
        default=Path("."),
        help="where to write harness.toml and what it runs (default: the current folder)",
    )
    parser.set_defaults(handler=Handler("._init", "handle"))
