"""`harness checkpoints`: its command line (the handler is `_checkpoints.handle`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._handlers import Handler


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "checkpoints", help="list, compare and restore the checkpoints runs made of a workspace"
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    def common(action: argparse.ArgumentParser) -> None:
        action.add_argument(
            "-w",
            "--workspace",
            type=Path,
            default=Path("."),
            help="the workspace (default: the current folder)",
        )
        action.add_argument(
            "--state-dir",
            type=Path,
            help="where snapshots live, for a workspace outside git "
            "(default: under $XDG_STATE_HOME)",
        )

    listing = actions.add_parser("list", help="list the checkpoints, oldest first per run")
    common(listing)
    listing.add_argument("--series", help="only this run's (series) checkpoints")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    diff = actions.add_parser(
        "diff", help="the files that differ between a checkpoint and the workspace (or another)"
    )
    common(diff)
    diff.add_argument("checkpoint", help="a checkpoint id (4 or more hex digits)")
    diff.add_argument("other", nargs="?", help="compare with this checkpoint instead")
    restore = actions.add_parser("restore", help="put the workspace back as it was at a checkpoint")
    common(restore)
    restore.add_argument("checkpoint", help="a checkpoint id (4 or more hex digits)")
    parser.set_defaults(handler=Handler("._checkpoints", "handle"))
