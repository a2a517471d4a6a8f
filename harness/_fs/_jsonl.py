"""Reading and writing JSONL files (fixtures, transcripts, recordings).

Reading keeps line numbers: a file that cannot be read, a line that is not UTF-8 and a line
that is not JSON are `FixtureError`s naming the file and the line, never a bare `OSError`,
`UnicodeDecodeError` or `JSONDecodeError`.

Writing never tears a line and always writes valid UTF-8: `dump_line` serializes the whole
line first, escaping lone surrogates (a non-UTF-8 file name decoded with ``surrogateescape``)
as ``\\udcxx`` so the line round-trips, and `LineFile` writes it in one call, cutting the file
back to its last whole line when the write fails part-way (a full disk, a file-size limit).
"""

from __future__ import annotations

import codecs
import errno
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

from .._errors import ConfigurationError, FixtureError
from ._files import TEXT_LIMIT, FileRefused, read_regular_file, read_text_file

# The largest fixture or transcript read whole: far above a long run's, and a bound on memory
# for a path that names something else (a sparse file of a terabyte).
MAX_JSONL_BYTES = 256 * 1024 * 1024


def read_lines(path: str | Path, *, what: str) -> list[str]:
    """The lines of `path` (a `what`: "fixture", "transcript"), each decoded as UTF-8.

    Lines are split on ``\\n`` only, as JSONL is: a JSON string may hold a raw U+2028 or
    U+0085, which `str.splitlines` would wrongly treat as line ends. A UTF-8 byte-order mark
    at the start of the file is dropped. A FIFO, a device or a file over `MAX_JSONL_BYTES` is
    refused (a `FixtureError`), never waited on or read without end.
    """
    try:
        data = read_regular_file(path, limit=MAX_JSONL_BYTES, what=what)
    except OSError as exc:
        raise FixtureError(f"cannot read the {what}: {exc.strerror or exc}", path=path) from None
    except FileRefused as exc:
        raise FixtureError(f"cannot read the {what}: it {exc.reason}", path=path) from None
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
    a ``#`` comment); see `load_line`."""
    for lineno, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if not stripped or (comments and stripped.startswith("#")):
            continue
        yield lineno, load_line(stripped, path=path, line=lineno)


MAX_DEPTH = 100
"""How deeply a JSONL line may nest arrays and objects: deeper is a line error (Python's own
parser would raise `RecursionError` somewhere near a thousand)."""


def load_line(raw: str | bytes, *, path: str | Path | None, line: int | None) -> Any:
    """One JSONL line parsed; a line that is not UTF-8, not JSON, or nested deeper than
    `MAX_DEPTH` is a `FixtureError` naming `path` and `line`."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FixtureError(
                f"not UTF-8: byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line",
                path=path,
                line=line,
            ) from None
    try:
        return parse_json(raw)
    except ValueError as exc:
        raise FixtureError(str(exc), path=path, line=line) from None


def parse_json(text: str) -> Any:
    """`text` parsed as JSON; a `ValueError` whose message says why not ("not valid JSON:
    Expecting value (line 1, column 5)", "nested deeper than 100 levels ..."), for a caller to
    put beside the file and line it names. Nesting deeper than `MAX_DEPTH` is refused, so an
    adversarial document is an error, never a `RecursionError`."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        where = (
            f"column {exc.colno}" if exc.lineno == 1 else f"line {exc.lineno}, column {exc.colno}"
        )
        raise ValueError(f"not valid JSON: {exc.msg} ({where})") from None
    except RecursionError:
        value = None
        too_deep = True
    else:
        # Only a text with more brackets than the limit can nest that deep: most skip the walk.
        too_deep = text.count("[") + text.count("{") > MAX_DEPTH and _depth(value) > MAX_DEPTH
    if too_deep:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels of arrays and objects")
    return value


def read_json_file(
    path: str | os.PathLike[str],
    *,
    limit: int = TEXT_LIMIT,
    what: str = "file",
    follow_links: bool = True,
) -> Any:
    """The JSON document in the regular file at `path`: `read_text_file`, then `parse_json`;
    a document that is not JSON, or nests too deeply, is `FileRefused` saying why."""
    text = read_text_file(path, limit=limit, what=what, follow_links=follow_links)
    try:
        return parse_json(text)
    except ValueError as exc:
        raise FileRefused(what, str(Path(path)), f"is {exc}") from None


def _depth(value: Any) -> int:
    """How deeply `value` nests lists and dicts (without recursion)."""
    deepest = 0
    pending = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            item = list(item.values())
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            break
        pending.extend((child, level + 1) for child in item if isinstance(child, dict | list))
    return deepest


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_surrogates(text: str) -> str:
    """`text` with each lone surrogate written as a ``\\udcxx`` escape (as JSON spells it)."""
    return _SURROGATE.sub(_escape, text)


def without_surrogates(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings) with lone surrogates in its strings written as
    ``\\udcxx`` text, for what must leave as UTF-8 (a provider's request); the value itself
    when it has none."""
    if isinstance(value, str):
        return escape_surrogates(value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [without_surrogates(v) for v in value]
    return value


def _dumps(data: Any) -> str:
    """JSON text, never Python's ``NaN`` or ``Infinity`` (which no JSON reader takes): a float
    that is not finite is written as null."""
    try:
        return json.dumps(data, ensure_ascii=False, allow_nan=False)
    except ValueError:  # a non-finite float somewhere: rare, so only then walk the data
        return json.dumps(_finite(data), ensure_ascii=False, allow_nan=False)


def _finite(data: Any) -> Any:
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, Mapping):
        return {key: _finite(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(value) for value in data]
    return data


def dump_json(data: Any) -> str:
    """`data` as compact-enough JSON text that always encodes as UTF-8: characters stay as
    they are, except lone surrogates, which become ``\\udcxx`` escapes (inside a JSON string,
    the only place they can appear, so `json.loads` gives back the same text). A float that
    is not finite (NaN, infinity) is null: Python would write ``NaN``, which is not JSON."""
    text = _dumps(data)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return escape_surrogates(text)
    return text


def dump_line(data: Any) -> bytes:
    """One JSONL line (with its newline) as UTF-8 bytes; see `dump_json`."""
    text = _dumps(data) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return escape_surrogates(text).encode("utf-8")


def check_output_file(what: str, path: str | Path) -> Path:
    """`path` if a file can be created or replaced there, else a `ConfigurationError` naming it:
    it is a folder, or a parent on the way is a file. Nothing is created."""
    target = Path(path)
    if target.is_dir():
        raise ConfigurationError(f"the {what} {str(target)!r} is a folder; name a file")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigurationError(
                    f"the {what} {str(target)!r} cannot be created: {str(parent)!r} is a file, "
                    "not a folder"
                )
            break
    return target


class LineFile:
    """A file written one whole line per `write`, unbuffered (each line reaches the operating
    system at once, so a crash loses nothing written).

    A write that fails part-way is cut back to the last whole line and raises the `OSError`;
    the file stays usable (a later write starts on a fresh line).
    """

    __slots__ = ("_fd", "_size", "path")

    def __init__(self, what: str, path: str | Path) -> None:
        self.path = check_output_file(what, path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = os.open(
                self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666
            )
        except OSError as exc:
            raise ConfigurationError(
                f"cannot write the {what} {str(self.path)!r}: {exc.strerror or exc}"
            ) from None
        self._size = 0

    @property
    def closed(self) -> bool:
        return self._fd is None

    def write(self, data: Mapping[str, Any]) -> None:
        """Append `data` as one line (see `dump_line`)."""
        line = dump_line(data)
        fd = self._fd
        if fd is None:
            raise ValueError(f"{self.path} is closed")
        view = memoryview(line)
        done = 0
        try:
            while done < len(line):
                done += _write_some(fd, view[done:], self.path)
        except OSError:
            if done:
                with suppress(OSError):  # a device such as /dev/full cannot be truncated
                    os.ftruncate(fd, self._size)
                with suppress(OSError):
                    os.lseek(fd, self._size, os.SEEK_SET)
            raise
        self._size += len(line)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with suppress(OSError):  # every line is already written: nothing is lost
                os.close(fd)


def _write_some(fd: int, data: memoryview, path: Path) -> int:
    wrote = os.write(fd, data)
    if wrote == 0:  # not an error the system reported, but no progress either
        raise OSError(errno.EIO, "the write made no progress", str(path))
    return wrote
