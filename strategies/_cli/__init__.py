"""The `harness` command line: `run`, `check`, the agent hook bridge, and the task board.

This is the one place that wires all four packages together.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import _board, _check, _hook, _run

SUBCOMMANDS = [_run, _check, _hook, _board]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Run LLM agents unattended; do not let them stop before the work is done.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse arguments and run the chosen subcommand; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":  # pragma: no cover - exercised through `python -m strategies`
    sys.exit(main())
