"""Reading a JSONL transcript back as typed events, one line at a time, and folding the events
into a run's counts.

`TranscriptReader` is the one reader: it streams the file (a line at a time, never the whole
file), turns each line into its event class with `Event.from_dict` (see `_events._base`), and
names the file, the line and the field of anything wrong: a line that is not UTF-8, not JSON,
nested deeper than `MAX_DEPTH`, not an object, or an event whose field is missing or of the
wrong type.

`RunTally` is the one fold of the counts (turns, tool calls, tool errors, tokens and cost,
the latest time, the halt) that the viewer, the board's recovery and the progress display
share.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path

from attrs import evolve, frozen

from .._errors import FixtureError
from .._fs._files import FileRefused, open_regular_file
from .._fs._jsonl import load_line
from .._usage import Usage
from ._base import Event, event_from_dict
from ._context import ContextCompacted
from ._pause import RunPaused
from ._run import RunHalted, TurnFinished, TurnStarted
from ._tool import ToolCalled


class TranscriptReader:
    """The events of the JSONL transcript `path`, in order, as ``(line number, event)``,
    read one line at a time (see the module docstring).

    With `allow_cut_off`, a last line without its newline that is not valid JSON (a run that
    crashed mid-write leaves one) is not an error: iteration ends before it and
    `cut_off_line` names it. Each iteration reads the file afresh.
    """

    __slots__ = ("allow_cut_off", "cut_off_line", "path")

    def __init__(self, path: str | Path, *, allow_cut_off: bool = False) -> None:
        self.path = Path(path)
        self.allow_cut_off = allow_cut_off
        self.cut_off_line: int | None = None

    def __iter__(self) -> Iterator[tuple[int, Event]]:
        for number, data in self.rows():
            yield number, event_from_dict(data, path=self.path, line=number)

    def rows(self) -> Iterator[tuple[int, object]]:
        """The lines as parsed JSON, ``(line number, value)``, blank lines skipped."""
        self.cut_off_line = None
        try:  # a FIFO or a device is refused, never waited on or read without end
            handle = open_regular_file(self.path, what="transcript")
        except OSError as exc:
            raise FixtureError(
                f"cannot read the transcript: {exc.strerror or exc}", path=self.path
            ) from None
        except FileRefused as exc:
            raise FixtureError(
                f"cannot read the transcript: it {exc.reason}", path=self.path
            ) from None
        with handle:
            number = 0
            for raw in handle:  # binary files split on b"\n" only, as JSONL must
                number += 1
                if number == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8) :]
                if not raw.strip():
                    continue
                try:
                    value = load_line(raw, path=self.path, line=number)
                except FixtureError:
                    if self.allow_cut_off and not raw.endswith(b"\n"):
                        self.cut_off_line = number
                        return
                    raise
                yield number, value

    def __repr__(self) -> str:
        return f"TranscriptReader({str(self.path)!r})"


@frozen
class RunTally:
    """A run's counts folded from its events, in order: `add` returns the tally with one more
    event counted.

    `turns` counts the model calls started (as the run and its budget do: a call in flight
    counts, and a call a usage limit cut off does not: ``run.paused`` takes it back) and
    `turns_finished` those that returned; `tool_calls` counts the tool results
    recorded and `tool_errors` those that failed; `usage` adds up the finished calls' tokens
    and cost, a compaction's summary call included (an unknown price makes the cost unknown
    from there on); `at` is the latest event's time. Once ``run.halted`` comes, its totals
    (turns, tool calls, usage) are the run's own and `halt` holds it.
    """

    turns: int = 0
    turns_finished: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    usage: Usage = Usage()
    at: float = 0.0
    halt: RunHalted | None = None

    def add(self, event: Event) -> RunTally:
        at = max(self.at, event.at)
        match event:
            case TurnStarted():
                return evolve(self, turns=self.turns + 1, at=at)
            case RunPaused():  # the call was cut off by a usage limit: not a turn
                return evolve(self, turns=max(self.turns - 1, 0), at=at)
            case TurnFinished():
                usage = self.usage + event.response.usage
                return evolve(self, turns_finished=self.turns_finished + 1, usage=usage, at=at)
            case ContextCompacted():  # a summary is a model call of its own
                return evolve(self, usage=self.usage + event.usage, at=at)
            case ToolCalled():
                errors = self.tool_errors + event.is_error
                return evolve(self, tool_calls=self.tool_calls + 1, tool_errors=errors, at=at)
            case RunHalted():
                return evolve(
                    self,
                    turns=event.turns,
                    tool_calls=event.tool_calls,
                    usage=event.usage,
                    at=at,
                    halt=event,
                )
        return evolve(self, at=at) if at != self.at else self
