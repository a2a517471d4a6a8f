"""`harness view TRANSCRIPT.jsonl`: write the run as one self-contained HTML page.
`harness view BOARD_DIR`: a page per attempt of the board and an index page of its tasks.
`harness view STATE_DIR`: the stop hooks' verdicts (its ``verdicts.jsonl``) as a page."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import FixtureError, HarnessError

EXIT_OK = 0
EXIT_ERROR = 2


def handle(args: argparse.Namespace) -> int:
    # Imported here: `harness run` should not pay for the viewer at start-up.
    from strategies._viewer import is_board, write_view

    source: Path = args.transcript
    if source.is_dir() and is_board(source):
        return _board(source, args.output)
    if source.is_dir() and (source / "verdicts.jsonl").is_file():
        return _verdicts(source, args.output)
    out: Path = args.output or source.with_suffix(".html")
    if out.resolve() == source.resolve():
        print(f"harness: the page would overwrite the transcript {str(source)!r}", file=sys.stderr)
        return EXIT_ERROR
    try:
        view = write_view(source, out)
    except FileNotFoundError as exc:
        missing = source if not source.exists() else Path(exc.filename or out)
        print(f"harness: no such file or folder: {str(missing)!r}", file=sys.stderr)
        return EXIT_ERROR
    except (IsADirectoryError, PermissionError) as exc:
        print(f"harness: {exc.strerror}: {exc.filename!r}", file=sys.stderr)
        return EXIT_ERROR
    except FixtureError as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(out)
    if view.cut_off_line is not None:
        print(
            f"harness: {source}:{view.cut_off_line} was cut off mid-write; the page shows the "
            "lines before it",
            file=sys.stderr,
        )
    if not view.runs or view.runs[-1].halt is None:
        print("harness: the transcript ends without run.halted (a crashed run?)", file=sys.stderr)
    return EXIT_OK


def _board(folder: Path, output: Path | None) -> int:
    from strategies._viewer import write_board_view
    from strategies._viewer._board_page import board_state_of

    out = output or board_state_of(folder) / "view"
    try:
        view = write_board_view(folder, out)
    except (HarnessError, OSError) as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(view.index)
    for page in view.attempts:
        if page.problem is not None:
            attempt = page.attempt
            print(
                f"harness: {attempt.task} attempt {attempt.number} has no page: {page.problem}",
                file=sys.stderr,
            )
    return EXIT_OK


def _verdicts(folder: Path, output: Path | None) -> int:
    from strategies._viewer._verdicts_page import render_verdicts

    from ._hooks._core import read_verdicts

    out = output or folder / "verdicts.html"
    try:
        verdicts = [v.to_json() for v in read_verdicts(folder)]
        out.write_text(
            render_verdicts(str(folder), verdicts), encoding="utf-8", errors="backslashreplace"
        )
    except (HarnessError, OSError) as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(out)
    return EXIT_OK
