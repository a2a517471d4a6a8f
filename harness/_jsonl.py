"""Reading a JSONL file (a fixture or a transcript), line numbers intact.

A file that cannot be read, a line that is not UTF-8 and a line that is not JSON are
`FixtureError`s naming the file and the line, never a bare `OSError`, `UnicodeDecodeError`
or `JSONDecodeError`.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ._errors import FixtureError


def read_lines(path: str | Path, *, what: str) -> list[str]:
    """The lines of `path` (a `what`: "fixture", "transcript"), each decoded as UTF-8.

    Lines are split on ``\\n`` only, as JSONL is: a JSON string may hold a raw U+2028 or
    U+0085, which `str.splitlines` would wrongly treat as line ends. A UTF-8 byte-order mark
    at the start of the file is dropped.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FixtureError(f"cannot read the {what}: {exc.strerror or exc}", path=path) from None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    lines: list[str] = []
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise FixtureError(
                f"not UTF-8: byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line",
                path=path,
                line=lineno,
            ) from None
    return lines


def json_rows(
    lines: Iterable[str], path: str | Path, *, comments: bool = False
) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed JSON)`` for each line that is not blank (nor, with `comments`,
    a ``#`` comment)."""
    for lineno, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if not stripped or (comments and stripped.startswith("#")):
            continue
        try:
            yield lineno, json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise FixtureError(
                f"not valid JSON: {exc.msg} (column {exc.colno})", path=path, line=lineno
            ) from None
