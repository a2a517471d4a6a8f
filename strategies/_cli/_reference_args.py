"""`harness spec-reference`: its command line (the handler is `_reference.handle`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._handlers import Handler


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "spec-reference",
        help="print the reference of every spec key (docs/spec-reference.md)",
    )
    parser.add_argument("-o", "--output", type=Path, help="write the page here instead")
    parser.set_defaults(handler=Handler("._reference", "handle"))
