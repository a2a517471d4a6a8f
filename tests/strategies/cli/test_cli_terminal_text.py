"""Text an agent, a check or a task file controls never reaches the operator's terminal raw:
escape sequences and other control characters are shown escaped in progress lines, outcomes,
logs, `harness check`, the live panel and `harness board status` (the real commands, run as
processes where the output is a pipe)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import RejectionLimit, RunHalted, RunStarted, TurnFinished, Usage
from harness.extend import ModelResponse
from strategies._cli._progress._live import LiveProgress
from strategies._cli._terminal import for_terminal

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 60

# Retitles the window, clears the screen, moves the cursor up over earlier lines, overprints
# with a carriage return, and reverses what follows (a bidirectional override).
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b[3Ahidden\rOVERPRINT \u202egnp.exe\x9b31m"
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[3Ahidden\\rOVERPRINT \\u202egnp.exe\\x9b31m"
RAW = ("\x1b", "\x07", "\r", "\u202e", "\x9b")


def _raw_in(text: str) -> list[str]:
    return [c for c in RAW if c in text]


def _harness(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "strategies", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
        cwd=cwd,
        check=False,
    )


def test_for_terminal_shows_control_characters_as_escapes() -> None:
    """One helper: every control character visible, text without any unchanged; with
    `lines`, line breaks and tabs are kept."""
    assert for_terminal(HOSTILE) == SHOWN
    assert for_terminal("plain text, ünïcode ✓") == "plain text, ünïcode ✓"
    assert for_terminal("a\tb\nc\x00") == "a\\tb\\nc\\x00"
    assert for_terminal("a\tb\nc\x7f", lines=True) == "a\tb\nc\\x7f"
    assert for_terminal(ValueError("x\x1b")) == "x\\x1b"


def _hostile_run(tmp_path: Path) -> Path:
    """A run whose agent claims done with hostile text, is told the check failed, and whose
    next model call fails with a hostile provider error of two lines, which is the halt."""
    (tmp_path / "ws").mkdir()
    rows = [
        {"text": f"done {HOSTILE}"},
        {"error": {"message": f"{HOSTILE}\nline two", "kind": "bad_request"}},
    ]
    (tmp_path / "script.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "check.py").write_text(
        f"print({HOSTILE!r})\nprint('line two')\nraise SystemExit(1)\n"
    )
    check = json.dumps([sys.executable, str(tmp_path / "check.py")])
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'prompt = "work"\nworkspace = "ws"\n[model]\ntype = "fixture"\npath = "script.jsonl"\n'
        f'[[checks]]\ntype = "command"\ncommand = {check}\n'
    )
    return spec


@pytest.mark.parametrize("verbose", [False, True])
def test_harness_run_shows_hostile_text_escaped(tmp_path: Path, verbose: bool) -> None:
    """Progress lines, the outcome (its multi-line reason kept on lines) and, with -v, every
    log line carry the agent's and the provider's text escaped, never raw."""
    spec = _hostile_run(tmp_path)
    done = _harness("run", str(spec), *(["-v"] if verbose else []))
    assert done.returncode == 1, done.stderr
    assert _raw_in(done.stdout) == []
    assert _raw_in(done.stderr) == []
    assert done.stdout.startswith(
        f"NOT VERIFIED: model call failed (bad_request): {SHOWN}\nline two\n"
    )
    # The progress line is the reason's first line: the outcome has the rest, on lines.
    assert f"halted: model call failed (bad_request): {SHOWN}\n" in done.stderr
    if not verbose:
        assert "\\nline two" not in done.stderr


def test_harness_check_shows_the_checks_report_escaped(tmp_path: Path) -> None:
    """`harness check` prints each line of a check's report with its control characters
    escaped."""
    spec = _hostile_run(tmp_path)
    done = _harness("check", str(spec))
    assert done.returncode == 1
    assert _raw_in(done.stdout) == []
    assert "      \\x1b]0;pwned\\x07\\x1b[2J\\x1b[3Ahidden\n" in done.stdout
    assert "      line two\n" in done.stdout


def test_the_live_panel_shows_hostile_text_escaped() -> None:
    """On a terminal: the lines printed above the panel, the status line and the halt."""
    out = io.StringIO()
    with LiveProgress(out, colour=False) as progress:
        sink = progress.track(label=f"T{HOSTILE}")
        sink.emit(RunStarted(0.0, "r1", "task", "loop", f"/ws{HOSTILE}", "check"))
        sink.emit(TurnFinished(0.5, "builder", 1, 1, ModelResponse(text=HOSTILE)))
        sink.emit(RunHalted(1.0, RejectionLimit(2, HOSTILE), False, 1, 0, Usage()))
    text = out.getvalue()
    own = text.replace("\x1b[?25l", "").replace("\x1b[?25h", "").replace("\r\x1b[J", "")
    assert _raw_in(own.replace("\x1b[1A", "")) == []
    assert SHOWN in text


def test_board_run_and_status_show_task_titles_and_reasons_escaped(tmp_path: Path) -> None:
    """A task file's title and id, and the agent's text in a task's reason, are escaped in the
    board's progress lines, its final table and `harness board status` (its events too)."""
    from _board_support import make_board, task_toml

    title = json.dumps(f"Title {HOSTILE}")
    make_board(
        tmp_path,
        {"t": task_toml("t", extra=f"title = {title}\n[budget]\nmax_turns = 1")},
        {"t": [{"error": {"message": f"{HOSTILE}\nline two", "kind": "bad_request"}}]},
    )
    ran = _harness("board", "run", str(tmp_path))
    status = _harness("board", "status", str(tmp_path), "--events", "5")
    assert (ran.returncode, status.returncode) == (1, 0), ran.stderr
    for text in (ran.stdout, ran.stderr, status.stdout):
        assert _raw_in(text) == [], text
    for text in (ran.stdout, status.stdout):
        assert f"Title {SHOWN}" in text
        assert "model call failed (bad_request): \\x1b]0;pwned" in text
