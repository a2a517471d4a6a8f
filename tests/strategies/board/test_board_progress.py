"""Progress for `harness board run`: on a terminal, board events above a live panel with a
status line per running attempt (driven through a real pseudo-terminal); through a pipe, the
plain board lines of old; and the `AttemptWatcher` hook that feeds the panel."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from _board_support import DEMO, make_board, task_toml, writes
from _terminal_support import SGR, FakeTerminal, panel_frames, run_on_terminal, terminal_env

from harness import Event, EventSink, RunHalted
from strategies._cli._board_run import _Tracking
from strategies._cli._progress._live import HIDE_CURSOR, SHOW_CURSOR, LiveProgress
from strategies.board import AttemptOutcome, AttemptSpec, AttemptWatcher, Board

pytestmark = pytest.mark.anyio


def _command(state: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "strategies",
        "board",
        "run",
        str(DEMO),
        "--agents",
        "2",
        "--state",
        str(state),
        *extra,
    ]


def test_a_terminal_gets_a_line_per_running_attempt(tmp_path: Path) -> None:
    """On a terminal the board's events print above a panel that keeps a status line per
    running attempt (``TASK#N``, its turn of the budget, tokens, what it is doing), two at
    once with two agents; the attempts' notable events print above it with their label; the
    panel is cleared and the cursor restored at the end, and the table goes to stdout."""
    screen, out, code = run_on_terminal(
        _command(tmp_path / "state"), terminal_env(TERM="xterm-256color", NO_COLOR="1"), 120
    )
    assert code == 1, screen  # release waits for review
    assert screen.startswith(HIDE_CURSOR)
    assert screen.rstrip().endswith(SHOW_CURSOR)
    assert "\x1b[3" not in screen  # NO_COLOR

    frames = panel_frames(screen)
    labels = {f.split()[1] for f in frames}
    assert {"schema#1", "changelog#1", "api#1", "docs#1", "release#1"} <= labels, frames
    assert any(re.search(r"schema#1 builder session 1 · turn 1/\d+ ", f) for f in frames)
    assert "\x1b[1A" in screen  # two attempts' lines at once, redrawn by moving up

    text = SGR.sub("", screen).replace("\r\n", "\n")
    assert re.search(r"\] task\.assigned +schema +attempt 1 by ", text)
    assert re.search(r"\] task\.review +release ", text)
    assert "schema#1: check passed" in text
    assert "release#1: check failed: " in text
    # The last line is the board's end, with no panel after it: every attempt left it.
    assert text.endswith("board.finished             4 complete, 1 review\n" + SHOW_CURSOR)
    assert out.splitlines()[-1] == "4 complete, 1 review"


def test_a_pipe_gets_the_plain_board_lines(tmp_path: Path) -> None:
    """Through a pipe, one plain line per board event, no escape sequence and no line of
    the attempts' runs."""
    done = subprocess.run(
        _command(tmp_path / "state"),
        capture_output=True,
        text=True,
        env=terminal_env(TERM="xterm"),
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "\x1b" not in done.stderr
    lines = done.stderr.splitlines()
    assert all(re.match(r"\[ *\d+\.\d\ds\] (board|task)\.\w+ ", line) for line in lines), lines
    assert "schema#1" not in done.stderr
    assert done.stdout.splitlines()[-1] == "4 complete, 1 review"


def test_a_dumb_terminal_gets_the_plain_board_lines(tmp_path: Path) -> None:
    screen, _, code = run_on_terminal(_command(tmp_path / "state"), terminal_env(TERM="dumb"), 100)
    assert code == 1
    assert "\x1b" not in screen
    assert re.search(r"\] task\.assigned +schema ", screen)


class _Collect:
    def __init__(self, events: list[Event]) -> None:
        self.events = events

    def emit(self, event: Event) -> None:
        self.events.append(event)


class Watcher:
    """A watcher that keeps what it was told, and the events its sinks got."""

    def __init__(self) -> None:
        self.started_: list[str] = []
        self.finished_: list[tuple[str, str | None]] = []
        self.events: dict[str, list[Event]] = {}

    def started(self, spec: AttemptSpec) -> list[EventSink]:
        label = f"{spec.info.task}#{spec.info.attempt}"
        self.started_.append(label)
        return [_Collect(self.events.setdefault(label, []))]

    def finished(self, spec: AttemptSpec, outcome: AttemptOutcome | None) -> None:
        label = f"{spec.info.task}#{spec.info.attempt}"
        self.finished_.append((label, outcome.outcome if outcome else None))


class Broken:
    def started(self, spec: AttemptSpec) -> list[EventSink]:
        raise RuntimeError("a broken display")

    def finished(self, spec: AttemptSpec, outcome: AttemptOutcome | None) -> None:
        raise RuntimeError("a broken display")


def _board(root: Path) -> Path:
    missing = '[[checks]]\ntype = "command"\ncommand = ["no-such-program-4242"]'
    return make_board(
        root,
        {"a": task_toml("a"), "b": task_toml("b", check=missing)},
        {"a": writes("a.txt"), "b": writes("b.txt")},
    )


async def test_watchers_get_each_attempts_run_events_and_outcome(tmp_path: Path) -> None:
    """A watcher's sinks get the attempt's run events (the local engine runs it in the
    board's process); `finished` comes with the outcome, for an attempt that never ran
    its agent too; a watcher that raises is dropped, not fatal."""
    watcher = Watcher()
    assert isinstance(watcher, AttemptWatcher)
    board = Board.from_folder(_board(tmp_path), watchers=[Broken(), watcher])
    result = await board.run()
    assert result.status_of("a") == "complete"
    assert result.status_of("b") == "failed"
    assert sorted(watcher.started_) == ["a#1", "b#1"]
    assert sorted(watcher.finished_) == [("a#1", "complete"), ("b#1", "failed")]
    halts = [e for e in watcher.events["a#1"] if isinstance(e, RunHalted)]
    assert len(halts) == 1
    assert halts[0].verified
    assert watcher.events["b#1"] == []


async def test_an_attempt_that_never_halts_leaves_the_live_panel(tmp_path: Path) -> None:
    """The panel's line of an attempt that fails before its run starts (so no run.halted)
    goes when the attempt is over."""
    screen = FakeTerminal()
    with LiveProgress(screen, interval=60, colour=False) as live:
        tracking = _Tracking(live)
        board = Board.from_folder(_board(tmp_path), watchers=[tracking])
        result = await board.run()
        assert result.status_of("b") == "failed"
        live.write("the board is over\n")  # redraws the panel below this line
        after = screen.getvalue().rsplit("the board is over\n", 1)[1]
    assert after == ""  # no line left for b#1 (nor a#1, which halted)
    assert tracking._sinks == {}
