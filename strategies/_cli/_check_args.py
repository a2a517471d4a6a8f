"""`harness check SPEC`: its command line (the handler is `_check.handle`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._handlers import Handler


def register(sub: Any) -> None:
    parser = sub.add_parser("check", help="run the spec's completion checks against a workspace")
    parser.add_argument("spec", type=Path, help="the run spec (TOML)")
    parser.add_argument("--workspace", type=Path, help="check this folder instead of the spec's")
    parser.add_argument(
        "--answer", help="the agent's final answer, for checks that read it (signal, judge)"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print the traceback of a check that raised",
    )
    parser.set_defaults(handler=Handler("._check", "handle"))
