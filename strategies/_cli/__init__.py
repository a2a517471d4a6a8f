"""The `harness` command line: `init`, `run`, `check`, `view`, the hook bridge, and the board.

This is the one place that wires all four packages together. Building the parser imports
only each command's grammar (the ``_*_args`` modules); a command's handler, and what it
needs, is imported when that command runs (`_handlers.Handler`): `harness hook` runs at every
stop of a coding agent, and `harness board status` should cost little more than Python's
start-up.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Sequence
from typing import Any

from ._exits import EXIT_CONFIGURATION, exit_code_for, shadowed, signal_handlers_kept
from ._hooks import _args as _hook_args
from ._streams import safe_std_streams

# Each command's name and the module (in this package) that registers its grammar, in the
# order of `--help`.
SUBCOMMANDS = {
    "init": "._init_args",
    "run": "._run_args",
    "check": "._check_args",
    "view": "._view_args",
    "hook": "._hooks._args",
    "board": "._board_args",
    "checkpoints": "._checkpoints_args",
    "spec-reference": "._reference_args",
    "stats": "._stats_args",
}


def build_parser(
    command: str | None = None, subcommand: str | None = None
) -> argparse.ArgumentParser:
    """The command line's parser; with `command` (one of `SUBCOMMANDS`), only that command's
    grammar is imported and registered: what the command parses and prints is the same, and a
    stop hook does not build the parsers of every other command (at each stop of an agent).
    With ``hook`` and an agent's stop hook as `subcommand`, only that stop's grammar."""
    parser = argparse.ArgumentParser(
        prog="harness",
        description="Run LLM agents unattended; do not let them stop before the work is done.",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if command == "hook" and subcommand is not None and _hook_args.register_stop(sub, subcommand):
        return parser
    chosen = [SUBCOMMANDS[command]] if command in SUBCOMMANDS else SUBCOMMANDS.values()
    for module in chosen:
        importlib.import_module(module, __package__).register(sub)
    return parser


def chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Any:
    """The (sub)parser of the command `args` chose, following nested commands down."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(args, action.dest, None)
            if name in action.choices:
                return chosen_parser(action.choices[name], args)
    return parser


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked (importing
    `importlib.metadata` costs every other command more than it takes to run some)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        print(f"{parser.prog} {_version()}")  # to stdout, as argparse's own version action
        parser.exit()


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("completion-harness")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a bare checkout
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse arguments and run the chosen subcommand; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(*argv[:2])
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # the usage of the command that was given them, not the top level's
            chosen_parser(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exc:
        if (
            exc.code == _hook_args.EXIT_ARGPARSE
            and argv[:1] == ["hook"]
            and argv[1:2] != ["install"]
        ):
            # To the agent, exit 2 from a Stop hook blocks the stop: a typo in the hook's
            # command line would send the agent back to work at every stop, for ever. A
            # person runs `hook install`: its usage errors exit 2, as every command's do.
            return _hook_args.EXIT_BROKEN
        raise
    # A reader that goes away (`| head -1`) never ends the command; after a signal's stop
    # a second signal kills the command, and the handlers are back after it.
    with signal_handlers_kept(), safe_std_streams():
        try:
            code: int = args.handler(args)
        except KeyboardInterrupt:  # Ctrl-C outside a run (loading a spec, say): nothing to stop
            print("harness: interrupted", file=sys.stderr)
            return exit_code_for(signal.SIGINT)
        except ImportError as error:
            if (said := shadowed(error)) is None:
                raise
            print(f"harness: {said}", file=sys.stderr)
            return EXIT_CONFIGURATION
    return code


if __name__ == "__main__":  # pragma: no cover - exercised through `python -m strategies`
    sys.exit(main())
