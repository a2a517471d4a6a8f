"""Reading a JSONL transcript for the viewer: the one typed reader, one line at a time, with a
cut-off last line tolerated.

A run that crashed may leave its last line half written. `JsonlTranscript` writes each event
as one line ending in a newline, in a single write, so a last line without its newline that is
not valid JSON is such a cut-off line: it is reported, not raised. Any other malformed line is
a `FixtureError` naming the file and the line (and the field, for a field of the wrong type).
"""

from __future__ import annotations

from pathlib import Path

from harness.events import TranscriptReader


def read_for_view(path: str | Path) -> TranscriptReader:
    """The events of `path`, read as the viewer folds them (nothing is read yet)."""
    return TranscriptReader(path, allow_cut_off=True)
