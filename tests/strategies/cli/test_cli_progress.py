"""Progress for `harness run`: a live status line redrawn in place on a terminal (driven
through a real pseudo-terminal), plain lines through a pipe, and the display API a board
reuses."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _terminal_support import SGR, FakeTerminal, panel_frames, run_on_terminal, terminal_env

from harness import (
    BudgetExceeded,
    CheckFailed,
    Completed,
    IterationStarted,
    RunHalted,
    RunStarted,
    ToolCall,
    ToolCalled,
    TurnFinished,
    TurnStarted,
    Usage,
)
from harness.extend import ModelResponse
from strategies._cli._progress._display import (
    PlainProgress,
    ProgressPrinter,
    RunTracker,
)
from strategies._cli._progress._live import (
    CLEAR_DOWN,
    HIDE_CURSOR,
    SHOW_CURSOR,
    LiveProgress,
    fit,
)
from strategies._cli._progress._open import open_progress
from termination import Budget

ROOT = Path(__file__).resolve().parents[3]

SPEC = """
prompt = "make done.txt"
workspace = "ws"
tools = ["write_file", "read_file"]
[model]
type = "fixture"
path = "script.jsonl"
[budget]
max_turns = 10
[[checks]]
type = "files"
paths = ["done.txt"]
"""

# Turn 1 takes a second to answer, so the status line must tick while it waits; its call
# fails once (a missing file), then it writes the file and claims done.
SCRIPT = [
    {
        "delay": 1.0,
        "tool_calls": [
            {"id": "r", "name": "read_file", "arguments": {"path": "missing.txt"}},
            {"id": "w", "name": "write_file", "arguments": {"path": "done.txt", "content": "x"}},
        ],
        "usage": {"input_tokens": 1200, "output_tokens": 80, "cost_usd": 0.004},
    },
    {"text": "done", "usage": {"input_tokens": 1500, "output_tokens": 5, "cost_usd": 0.005}},
]


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "script.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SCRIPT))
    path = tmp_path / "spec.toml"
    path.write_text(SPEC)
    return path


def _command(spec: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "strategies", "run", str(spec), *extra]


@pytest.mark.parametrize(("columns", "colour"), [(120, True), (52, False)])
def test_a_terminal_gets_a_live_status_line(spec: Path, columns: int, colour: bool) -> None:
    """On a terminal, `harness run` hides the cursor, keeps one status line (turn of the
    budget, tokens, cost, elapsed, what the run is doing) redrawn in place, ticking while
    the model thinks and never wider than the terminal; notable events print above it;
    at the end the line is cleared and the cursor restored; the outcome goes to stdout."""
    env = terminal_env(TERM="xterm-256color", NO_COLOR=None if colour else "1")
    # --realtime: the fixture's delays pass for real, so the model is seen thinking.
    screen, out, code = run_on_terminal(_command(spec, "--realtime"), env, columns)
    assert code == 0, screen
    assert out.startswith("VERIFIED COMPLETE")
    assert screen.startswith(HIDE_CURSOR)
    assert screen.rstrip().endswith(SHOW_CURSOR)
    assert screen.rindex(CLEAR_DOWN) < screen.rindex(SHOW_CURSOR)
    assert ("\x1b[3" in screen) is colour  # SGR colours only without NO_COLOR

    frames = panel_frames(screen)
    assert frames, screen
    assert all(len(f) <= columns - 1 for f in frames), [f for f in frames if len(f) >= columns]
    first_turn = [f for f in frames if "turn 1/10" in f and "· 0 tokens" in f]  # waiting
    ticks = {re.search(r"(\d+\.\d)s", f).group(1) for f in first_turn}  # type: ignore[union-attr]
    assert len(ticks) >= 2, f"the elapsed time did not move while the model thought: {frames}"
    if columns > 100:
        assert any("waiting for the model" in f for f in first_turn)
        assert any("1.3k tokens · $0.0040 · " in f for f in frames)
        assert any("1 tool calls (1 failed)" in f or "2 tool calls (1 failed)" in f for f in frames)
        assert any("last: write_file(done.txt)" in f for f in frames)

    lines = SGR.sub("", screen)
    assert "read_file failed" in lines
    assert "check passed" in lines
    assert "halted: completed: the completion check passed" in lines
    # The panel shows the turns, so their one-line summaries are not printed as well.
    assert "builder turn 1: calls" not in lines


def test_a_pipe_gets_plain_lines(spec: Path) -> None:
    """Through a pipe, the same run prints one plain, timestamped line per step and not a
    single escape sequence."""
    done = subprocess.run(
        _command(spec), capture_output=True, text=True, env=terminal_env(TERM="xterm"), timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stderr
    lines = done.stderr.splitlines()
    assert all(re.match(r"\[ *\d+\.\d\ds\] ", line) for line in lines), lines
    steps = [line.split("] ", 1)[1] for line in lines]
    assert steps[1:3] == [
        "builder session 1 started",
        "builder turn 1: calls read_file, write_file",
    ]
    assert steps[3].startswith("  read_file failed: error: FileNotFoundError")
    assert steps[-2:] == ["check passed", "halted: completed: the completion check passed"]
    assert done.stdout.startswith("VERIFIED COMPLETE")


def test_a_dumb_terminal_gets_plain_lines(spec: Path) -> None:
    """TERM=dumb cannot redraw in place: plain lines, even on a terminal."""
    screen, _, code = run_on_terminal(_command(spec), terminal_env(TERM="dumb"), 100)
    assert code == 0
    assert "\x1b" not in screen
    assert "builder turn 1: calls read_file, write_file" in screen


def _turn(at: float, turn: int, *calls: str, cost: float | None = 0.01) -> list[object]:
    response = ModelResponse(
        "",
        tuple(ToolCall(f"c{turn}{n}", n, {"path": "a.txt"}) for n in calls),
        Usage(100, 10, 0, cost),
    )
    return [
        TurnStarted(at, "builder", 1, turn),
        TurnFinished(at + 0.5, "builder", 1, turn, response),
    ]


def test_a_tracker_folds_a_runs_events_into_its_status() -> None:
    """Turns started, tool calls and failures, tokens, cost (unknown once any price is), what
    the run is doing, and the halt; elapsed stops moving once the run has halted."""
    tracker = RunTracker("T-1", Budget(max_turns=5, max_cost_usd=1.0))
    assert (tracker.status.max_turns, tracker.status.max_cost_usd) == (5, 1.0)
    tracker.emit(RunStarted(0.0, "abc", "task", "ralph", None, "check"))
    tracker.emit(IterationStarted(0.0, "builder", 1))
    first, second = _turn(0.1, 1, "read_file", "write_file")
    tracker.emit(first)  # type: ignore[arg-type]
    assert (tracker.status.turns, tracker.status.activity) == (1, "waiting for the model")
    tracker.emit(second)  # type: ignore[arg-type]
    assert tracker.status.activity == "running read_file, write_file"
    call = ToolCall("c1read_file", "read_file", {"path": "a.txt"})
    tracker.emit(ToolCalled(0.7, "builder", 1, call, "nope", True))
    status = tracker.status
    assert (status.tool_calls, status.tool_errors, status.last_tool) == (
        1,
        1,
        "read_file(a.txt) failed",
    )
    assert (status.total_tokens, status.cost_usd) == (110, 0.01)
    for event in _turn(1.0, 2, cost=None):
        tracker.emit(event)  # type: ignore[arg-type]
    assert tracker.status.cost_usd is None
    assert tracker.status.activity == "claims done"
    assert tracker.status.last_tool is None
    tracker.emit(CheckFailed(1.6, "builder", 2, "check", "no"))
    assert tracker.elapsed(time.monotonic() + 5) >= 6.6
    reason = BudgetExceeded("max_turns", 2, 2)
    tracker.emit(RunHalted(1.7, reason, False, 2, 1, Usage(200, 20, 0, None)))
    assert tracker.status.halted == reason.describe()
    assert tracker.status.verified is False
    assert tracker.elapsed(time.monotonic() + 5) == 1.7


def test_the_live_panel_keeps_a_line_per_run_and_log_lines_above_it() -> None:
    """Two runs tracked at once (as a board would) get a line each, redrawn by moving the
    cursor up; a line written from elsewhere waits for its newline and goes above the panel;
    a run that halts leaves the panel; closing clears it and shows the cursor."""
    screen = FakeTerminal()
    with LiveProgress(screen, interval=60, colour=False) as live:
        one = live.track("T-1")
        two = live.track("T-2")
        one.emit(TurnStarted(0.0, "builder", 1, 1))
        two.emit(TurnStarted(0.0, "builder", 1, 1))
        assert "\x1b[1A" + CLEAR_DOWN in screen.getvalue()
        live.write("a log ")
        assert "a log" not in screen.getvalue()
        live.write("line\nand more")
        text = screen.getvalue()
        assert text.count("a log line\n") == 1
        after = text[text.rindex("a log line\n") :]
        assert "T-1 builder session 1 · turn 1" in after
        assert "T-2 builder session 1 · turn 1" in after
        one.emit(RunHalted(1.0, Completed(), True, 1, 0, Usage()))
        last = screen.getvalue()
        last = last[last.rindex(CLEAR_DOWN) :]
        assert "T-1: halted: completed" in last
        assert "T-1 builder" not in last.split("\n")[-1]
        assert "T-2 builder session 1" in last.split("\n")[-1]
    text = screen.getvalue()
    assert text.endswith("and more\n" + SHOW_CURSOR)
    assert text.startswith(HIDE_CURSOR)


def test_fit_drops_the_least_important_parts_first() -> None:
    parts = [(0, "turn 3"), (0, "1.0s"), (2, "9 tokens"), (3, "4 calls"), (1, "waiting")]
    assert fit(parts, 80) == "turn 3 · 1.0s · 9 tokens · 4 calls · waiting"
    assert fit(parts, 34) == "turn 3 · 1.0s · 9 tokens · waiting"
    assert fit(parts, 23) == "turn 3 · 1.0s · waiting"
    assert fit(parts, 10) == "turn 3 · …"


def test_open_progress_picks_the_display(monkeypatch: pytest.MonkeyPatch) -> None:
    """Live on a terminal that can redraw, plain lines on anything else, or when told."""
    monkeypatch.setenv("TERM", "xterm")
    assert isinstance(open_progress(FakeTerminal()), LiveProgress)
    assert isinstance(open_progress(io.StringIO()), PlainProgress)
    assert isinstance(open_progress(FakeTerminal(), live=False), PlainProgress)
    monkeypatch.setenv("TERM", "dumb")
    assert isinstance(open_progress(FakeTerminal()), PlainProgress)


def test_plain_progress_labels_each_runs_lines() -> None:
    out = io.StringIO()
    with PlainProgress(out) as progress:
        sink = progress.track("T-7")
        assert isinstance(sink, ProgressPrinter)
        sink.emit(IterationStarted(1.5, "builder", 2))
        progress.write("logged\n")
    assert out.getvalue() == "[   1.50s] T-7: builder session 2 started\nlogged\n"


def test_baselines_and_tampering_have_progress_lines() -> None:
    """`harness run` prints what the baseline found and each change to a protected path."""
    from harness.events import BaselineRecorded, ProtectedPathsChanged
    from harness.extend import Baseline, Tampering
    from strategies._cli._progress._display import describe

    found = Baseline("`pytest -rA`", "pytest", 3, ("t.py::test_old",), 1)
    assert describe(BaselineRecorded(0.1, found)) == (
        "baseline: 3 passing, 1 failing before the first turn: t.py::test_old",
        "plain",
    )
    unread = Baseline("`pytest -q`", None, 0, (), 1, "pytest named no passing test")
    line, _ = describe(BaselineRecorded(0.1, unread)) or ("", "plain")
    assert (
        line
        == "baseline: `pytest -q` could not be read into test names (pytest named no passing test)"
    )
    changed = ProtectedPathsChanged(0.2, "builder", 2, (Tampering("t.py", "deleted", "t.py"),))
    assert describe(changed) == (
        "protected files changed: t.py (deleted; protected by 't.py')",
        "bad",
    )


def test_a_retry_warning_reads_as_a_progress_line() -> None:
    """Among the progress lines, a model call's retry is one of them (``[  0.01s] ...``), not
    a structlog console line with its own timestamp and padding."""
    import io
    import re

    from harness.extend import LibraryLogger
    from strategies._cli._progress._open import open_progress
    from strategies._cli._run import logging_to_stderr

    stream = io.StringIO()
    progress = open_progress(stream, live=False)
    with progress, logging_to_stderr(False, progress):
        LibraryLogger("harness.providers").warning(
            "model.retry", what="gpt-4o", attempt=1, wait=2.0, kind="rate_limit", status_code=429
        )
    assert re.fullmatch(
        r"\[ *\d+\.\d\ds\] gpt-4o call failed \(rate_limit, HTTP 429\): retry 1 in 2s\n",
        stream.getvalue(),
    ), stream.getvalue()
