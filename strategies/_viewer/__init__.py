"""The run viewer: a self-contained HTML page for a JSONL transcript, or pages for a board's
attempts and an index of its tasks (`harness view`)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ._board_page import BoardView, is_board, write_board_view
from ._fold import build_view
from ._page import render_page, write_page
from ._read import read_for_view
from ._records import TranscriptView

__all__ = [
    "BoardView",
    "TranscriptView",
    "build_view",
    "is_board",
    "read_for_view",
    "render_page",
    "write_board_view",
    "write_page",
    "write_view",
]


def write_view(transcript: str | Path, out: str | Path) -> TranscriptView:
    """Render `transcript` into the HTML file `out`; a malformed line raises `FixtureError`
    (and writes no page). A lone surrogate from the transcript (a non-UTF-8 file name) shows
    as its ``\\udcxx`` escape.

    The transcript is read one event at a time and each run's timeline drawn into a temporary
    file as it goes, so memory stays flat however long the transcript is; the page is then
    written from the runs' summaries and those timelines."""
    reader = read_for_view(transcript)
    reader.path.stat()  # a missing transcript is a FileNotFoundError, as the command expects
    target = Path(out)
    with tempfile.TemporaryFile(dir=target.parent if target.parent.is_dir() else None) as timeline:
        view = build_view(reader, timeline)
        with target.open("wb") as page:
            write_page(view, page)
    return view
