"""The sinks every event of a run is sent to: a structlog logger, a list, a JSONL transcript.

Log levels: a run logs one INFO line when it ends (``run.halted``: the outcome, turns, usage),
as an HTTP client logs one per request, and one each time the harness refuses the agent or
judges its work (``check.failed``, ``verdict.reached``, ``feedback.injected``); WARNING is a
sensor's warning or halt; every routine step (the start, turns, tool calls, a new iteration, a
check that passed) is DEBUG. Every event, whatever its level, reaches the other sinks.

Sinks are synchronous and must not block: a structlog logger, an in-memory stream the caller
iterates, and a JSONL transcript. `at` is seconds since the run started, on the run's clock.
A sink that raises (a full disk, a closed pipe, a bug) is detached for the rest of the run and
reported once, as a ``sink.failed`` WARNING to the other sinks and in `RunResult.sink_failures`;
the run goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from logging import DEBUG, INFO, WARNING
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

from .._fs._jsonl import LineFile
from .._log import get_logger
from ._base import Event, event_from_dict


@runtime_checkable
class EventSink(Protocol):
    """Anything that takes events. `emit` is called on the loop and must not block."""

    def emit(self, event: Event) -> None: ...


_LEVELS = {"debug": DEBUG, "info": INFO, "warning": WARNING}


class StructlogSink:
    """Logs each event under its name, with `run_id` bound once and every field as a key.

    An event below the logger's level costs one comparison: the per-turn events are debug
    events, and a service usually logs at INFO. Without a `logger`, the library's logger
    ``harness``: structlog's once the application has configured
    structlog, else the standard library's, silent until `logging` is configured.
    """

    __slots__ = ("_is_enabled_for", "_log")

    def __init__(self, run_id: str, logger: Any = None) -> None:
        self._log = (logger if logger is not None else get_logger("harness")).bind(run_id=run_id)
        # structlog's filtering loggers answer `is_enabled_for`; stdlib's `isEnabledFor`.
        self._is_enabled_for: Callable[[int], bool] | None = getattr(
            self._log, "is_enabled_for", None
        ) or getattr(self._log, "isEnabledFor", None)

    def emit(self, event: Event) -> None:
        if self._is_enabled_for is not None and not self._is_enabled_for(_LEVELS[event.level]):
            return
        data = event.to_dict()
        del data["event"]
        getattr(self._log, event.level)(event.name, **data)


class JsonlTranscript:
    """Writes each event as one JSON line, straight to the file, so a crash loses nothing.

    A line is never torn: it is written whole or, when the write fails (a full disk, a
    file-size limit), cut back to the last whole line; the transcript then stops for good and
    the error is raised (a run detaches the sink and reports it). Lone surrogates in the text
    (a non-UTF-8 file name) are written as ``\\udcxx`` escapes, so every line is valid UTF-8.
    A path that is a folder or lies under a file is a `ConfigurationError`.
    """

    __slots__ = ("_file", "path")

    def __init__(self, path: str | Path) -> None:
        self._file: LineFile | None = LineFile("transcript", path)
        self.path = self._file.path

    def emit(self, event: Event) -> None:
        if self._file is not None:
            self.write_row(event.to_dict())

    def write_row(self, row: Mapping[str, Any]) -> None:
        """Append a line that is already an event's dict (one that came from another process,
        as a board's attempts do), with the same guarantees as `emit`."""
        if self._file is None:
            return
        try:
            self._file.write(row)
        except Exception:
            # Later lines after a lost one would leave a hole mid-file: stop here.
            self.close()
            raise

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __repr__(self) -> str:
        return f"JsonlTranscript({str(self.path)!r})"


class ListSink:
    """Keeps every event in a list (for tests and in-process consumers)."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def names(self) -> list[str]:
        return [e.name for e in self.events]

    def of_type(self, kind: type[Event]) -> list[Event]:
        return [e for e in self.events if isinstance(e, kind)]


def read_transcript(path: str | Path) -> list[dict[str, Any]]:
    """Load a JSONL transcript written by `JsonlTranscript`, each line as its dict; every line
    is read as its event first (see `TranscriptReader`), so a file that cannot be read, a
    line that is not UTF-8, not JSON or not a valid event are `FixtureError`s naming the
    line. For the typed events, one line at a time, iterate a `TranscriptReader`."""
    from ._reader import TranscriptReader

    reader = TranscriptReader(path)
    rows: list[dict[str, Any]] = []
    for line, row in reader.rows():
        event_from_dict(row, path=path, line=line)
        rows.append(cast(dict[str, Any], row))
    return rows
