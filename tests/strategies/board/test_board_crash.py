"""Crash safety, for real: a board process is killed with SIGKILL in the middle of a run and
started again; completed work stays complete, the interrupted task resumes, nothing ran twice
at once, and nothing recorded before the kill is lost."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from _board_support import make_board, task_toml, writes

TASKS = {
    "alpha": task_toml("alpha", priority=10),
    "slow": task_toml(
        "slow",
        priority=5,
        extra='[strategy]\ntype = "ralph"\nmax_iterations = 3\n[budget]\nmax_turns = 9',
        check='[[checks]]\ntype = "files"\npaths = ["one.txt", "two.txt"]',
    ),
    "after": task_toml("after", depends_on=["slow"]),
}
SCRIPTS = {
    "alpha.1": writes("alpha.txt"),
    # Iteration 1 writes half and claims done too early; iteration 2 hangs: it is killed there.
    "slow.1": [*writes("one.txt"), {"text": "thinking...", "delay": 600}],
    # The resumed attempt is told by the check what is missing and finishes.
    "slow.2": [
        {"expect": {"last_feedback_source": "initial_check"}, **writes("two.txt")[0]},
        writes("two.txt")[1],
    ],
    "after.1": writes("after.txt"),
}


def _board(folder: Path, log: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "strategies", "board", "run", str(folder), "--agents", "2", "-q"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def _rows(db: Path, query: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        return list(connection.execute(query))


def _wait_for(db: Path, query: str, process: subprocess.Popen[bytes], limit: float = 60) -> None:
    """Until `query` returns a row (the board records each event as it happens)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the board exited with {process.returncode}"
        if db.exists():
            try:
                if _rows(db, query):
                    return
            except sqlite3.OperationalError:  # the schema is still being created
                pass
        time.sleep(0.05)
    raise AssertionError(f"the board never recorded: {query}")


def test_a_board_killed_mid_run_resumes_and_runs_nothing_twice(tmp_path: Path) -> None:
    """SIGKILL while `slow` is in its second Ralph iteration and `alpha` is done; a second
    board meanwhile is refused; the restarted board finishes every task, `alpha` is not run
    again, `slow` resumes after its completed iteration, and no attempt overlapped another."""
    folder = make_board(tmp_path / "board", TASKS, SCRIPTS, per_attempt=True)
    db = folder / ".board" / "board.db"
    log = (tmp_path / "first.log").open("wb")
    first = _board(folder, log)
    try:
        _wait_for(
            db, "SELECT 1 FROM events WHERE kind = 'task.complete' AND task_id='alpha'", first
        )
        _wait_for(db, "SELECT 1 FROM events WHERE kind = 'task.rejected' AND task_id='slow'", first)

        second = subprocess.run(
            [sys.executable, "-m", "strategies", "board", "run", str(folder)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 2
        assert "a board is already running" in second.stderr

        before = _rows(db, "SELECT seq, kind, task_id FROM events ORDER BY seq")
        os.kill(first.pid, signal.SIGKILL)
        assert first.wait(timeout=30) == -signal.SIGKILL
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        log.close()

    assert _rows(db, "SELECT status FROM tasks WHERE id = 'slow'") == [("in_progress",)]
    assert _rows(db, "SELECT COUNT(*) FROM attempts WHERE ended_at IS NULL") == [(1,)]

    restarted = subprocess.run(
        [sys.executable, "-m", "strategies", "board", "run", str(folder), "--agents", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert restarted.returncode == 0, restarted.stderr
    statuses = {row[0]: row[1] for row in _rows(db, "SELECT id, status FROM tasks")}
    assert statuses == {"alpha": "complete", "slow": "complete", "after": "complete"}

    attempts = _rows(
        db,
        "SELECT task_id, number, owner, started_at, ended_at, outcome, resume, transcript "
        "FROM attempts ORDER BY task_id, number",
    )
    by_task: dict[str, list[tuple[object, ...]]] = {}
    for row in attempts:
        by_task.setdefault(str(row[0]), []).append(row)
    assert [r[5] for r in by_task["alpha"]] == ["complete"]  # not run again
    assert [r[5] for r in by_task["after"]] == ["complete"]
    killed, resumed = by_task["slow"]
    assert (killed[5], resumed[5]) == ("interrupted", "complete")
    assert killed[2] != resumed[2]  # two board processes
    assert json.loads(str(resumed[6]))["iterations"] == 1

    # Nothing ran twice at once: the killed attempt's last event (its transcript, on disk)
    # came before the resumed attempt started.
    lines = Path(str(killed[7])).read_text().splitlines()
    last = max(json.loads(line)["at"] for line in lines)
    assert float(str(killed[3])) + last <= float(str(resumed[3]))
    assert any('"check.failed"' in line for line in lines)

    # Nothing recorded before the kill was lost, and the log goes on from there.
    after = _rows(db, "SELECT seq, kind, task_id FROM events ORDER BY seq")
    assert after[: len(before)] == before
    kinds = [(kind, task) for _, kind, task in after[len(before) :]]
    assert kinds[0] == ("task.retried", "slow")
    assert ("task.complete", "slow") in kinds
    workspace = folder / ".board" / "workspace"
    assert sorted(p.name for p in workspace.iterdir()) == [
        "after.txt",
        "alpha.txt",
        "one.txt",
        "two.txt",
    ]


def test_sigterm_stops_the_board_cleanly_and_the_next_run_resumes(tmp_path: Path) -> None:
    """SIGTERM cancels the attempts in progress (their commands die with them), exits 143
    with a message, and leaves the task to resume on the next run."""
    tasks = {"slow": TASKS["slow"]}
    folder = make_board(tmp_path / "board", tasks, SCRIPTS, per_attempt=True)
    db = folder / ".board" / "board.db"
    with (tmp_path / "board.log").open("wb") as log:
        board = _board(folder, log)
        try:
            _wait_for(db, "SELECT 1 FROM events WHERE kind = 'task.rejected'", board)
            board.send_signal(signal.SIGTERM)
            assert board.wait(timeout=30) == 128 + signal.SIGTERM
        finally:
            if board.poll() is None:
                board.kill()
                board.wait()
    assert (
        "stopped by SIGTERM; the attempts in progress resume"
        in (tmp_path / "board.log").read_text()
    )
    assert _rows(db, "SELECT status FROM tasks") == [("in_progress",)]
    restarted = subprocess.run(
        [sys.executable, "-m", "strategies", "board", "run", str(folder), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert restarted.returncode == 0, restarted.stderr
    assert _rows(db, "SELECT outcome FROM attempts ORDER BY number") == [
        ("interrupted",),
        ("complete",),
    ]
