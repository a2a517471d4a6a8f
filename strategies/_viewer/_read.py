"""Reading a JSONL transcript for the viewer: every line checked, a cut-off last line tolerated.

A run that crashed may leave its last line half written. `JsonlTranscript` writes each event
as one line ending in a newline, in a single write, so a last line without its newline that is
not valid JSON is such a cut-off line: it is reported, not raised. Any other malformed line is
a `FixtureError` naming the file and the line (and the field, for a field of the wrong type).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

from attrs import frozen

from harness import FixtureError
from harness.extend import FileRefused, read_regular_file

# The largest transcript shown: far above a long run's; a bound on memory besides.
MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024

T = TypeVar("T")


@frozen
class Row:
    """One transcript event (or an object inside one), with the file and line it came from.

    The typed getters raise `FixtureError` naming the file, line and field (``response.text``
    for a field of a nested object) when a field is missing or of the wrong type.
    """

    path: str
    line: int
    data: Mapping[str, Any]
    prefix: str = ""

    @property
    def name(self) -> str:
        return str(self.data["event"])

    @property
    def at(self) -> float:
        return self.number("at", 0.0)

    def has(self, field: str) -> bool:
        return self.data.get(field) is not None

    def text(self, field: str, default: str | None = None) -> str:
        return self._typed(field, default, str, "a string")

    def optional_text(self, field: str) -> str | None:
        return self.text(field) if self.has(field) else None

    def integer(self, field: str, default: int | None = None) -> int:
        return self._typed(field, default, int, "an integer")

    def number(self, field: str, default: float | None = None) -> float:
        return self._typed(field, default, float, "a number")

    def optional_number(self, field: str) -> float | None:
        return self.number(field) if self.has(field) else None

    def flag(self, field: str, default: bool | None = None) -> bool:
        return self._typed(field, default, bool, "true or false")

    def nested(self, field: str) -> Row:
        """The object in `field`, as a row whose errors name ``field.inner``."""
        value = self._typed(field, None, dict, "an object")
        return Row(self.path, self.line, value, f"{self.prefix}{field}.")

    def nested_list(self, field: str) -> list[Row]:
        """The objects in the list in `field` (absent: none)."""
        if not self.has(field):
            return []
        values = self._typed(field, None, list, "a list")
        rows = []
        for index, value in enumerate(values):
            where = f"{field}[{index}]"
            if not isinstance(value, Mapping):
                raise self.error(where, "an object", value)
            rows.append(Row(self.path, self.line, value, f"{self.prefix}{where}."))
        return rows

    def _typed(self, field: str, default: T | None, kind: type[T], expected: str) -> T:
        if field not in self.data:
            if default is not None:
                return default
            raise FixtureError("missing", path=self.path, line=self.line, field=self.prefix + field)
        value = self.data[field]
        if isinstance(value, bool) and kind is not bool:
            raise self.error(field, expected, value)
        if kind is float and isinstance(value, int):
            return cast(T, float(value))
        if not isinstance(value, kind):
            raise self.error(field, expected, value)
        return value

    def error(self, field: str, expected: str, got: object) -> FixtureError:
        shown = repr(got)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return FixtureError(
            f"expected {expected} (got {shown})",
            path=self.path,
            line=self.line,
            field=self.prefix + field,
        )


@frozen
class Transcript:
    """The events of a transcript file, and the number of its cut-off last line, if any."""

    path: Path
    rows: tuple[Row, ...]
    cut_off_line: int | None


class _Unreadable(Exception):
    """A line that is not JSON at all (as a line cut off mid-write is)."""


def read_for_view(path: str | Path) -> Transcript:
    """Read every event of `path`; a malformed line raises `FixtureError` naming it."""
    source = Path(path)
    try:  # a FIFO or a device is refused, never waited on or read without end
        raw = read_regular_file(source, limit=MAX_TRANSCRIPT_BYTES, what="transcript")
    except FileRefused as exc:
        raise FixtureError(f"cannot read the transcript: it {exc.reason}", path=source) from None
    lines = raw.split(b"\n")
    # What follows the last newline: nothing for a complete file, else a line cut off mid-write.
    tail = lines.pop()
    rows = [row for number, blob in enumerate(lines, 1) if (row := _row(source, number, blob))]
    cut_off: int | None = None
    if tail.strip():
        try:
            data = _decode(tail)
        except _Unreadable:
            cut_off = len(lines) + 1
        else:
            rows.append(_event(source, len(lines) + 1, data))
    return Transcript(source, tuple(rows), cut_off)


def _row(path: Path, number: int, blob: bytes) -> Row | None:
    if not blob.strip():
        return None
    try:
        data = _decode(blob)
    except _Unreadable as exc:
        raise FixtureError(str(exc), path=path, line=number) from None
    return _event(path, number, data)


def _decode(blob: bytes) -> object:
    try:
        return json.loads(blob.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _Unreadable(f"not valid UTF-8 (byte {exc.start + 1})") from None
    except json.JSONDecodeError as exc:
        raise _Unreadable(f"not valid JSON ({exc.msg} at column {exc.colno})") from None


def _event(path: Path, number: int, data: object) -> Row:
    if not isinstance(data, dict):
        raise FixtureError("not a transcript event (not an object)", path=path, line=number)
    row = Row(str(path), number, data)
    row.text("event")
    row.number("at", 0.0)
    return row
