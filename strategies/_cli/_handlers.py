"""A subcommand's handler named by its module, imported only when that subcommand runs.

Building the parser (`harness --help`, or any command) then imports argparse and the
commands' grammar (the ``_*_args`` modules), not what every handler needs: `harness hook`
runs at each stop of a coding agent, and `harness board status` reads a database; neither
should pay for importing the loop, the providers or the board's engine.
"""

from __future__ import annotations

import argparse
import importlib


class Handler:
    """Calls `function` of the module `module` (relative to this package) with the parsed
    arguments, importing the module on the first call; returns the exit code."""

    __slots__ = ("function", "module")

    def __init__(self, module: str, function: str) -> None:
        self.module = module
        self.function = function

    def __call__(self, args: argparse.Namespace) -> int:
        handle = getattr(importlib.import_module(self.module, __package__), self.function)
        code: int = handle(args)
        return code

    def __repr__(self) -> str:
        return f"Handler({self.module!r}, {self.function!r})"
