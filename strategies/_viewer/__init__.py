"""The run viewer: a self-contained HTML page for a JSONL transcript, or pages for a board's
attempts and an index of its tasks (`harness view`)."""

from __future__ import annotations

from pathlib import Path

from ._board import BoardView, is_board, write_board_view
from ._fold import build_view
from ._page import render_page
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
    "write_view",
]


def write_view(transcript: str | Path, out: str | Path) -> TranscriptView:
    """Render `transcript` into the HTML file `out`; a malformed line raises `FixtureError`.
    A lone surrogate from the transcript (a non-UTF-8 file name) shows as its ``\\udcxx``
    escape."""
    view = build_view(read_for_view(transcript))
    Path(out).write_text(render_page(view), encoding="utf-8", errors="backslashreplace")
    return view
