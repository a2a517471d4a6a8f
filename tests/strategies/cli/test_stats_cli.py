"""`harness stats`: the ledger across runs, met where a user meets it: the command as a
process, over the demo's transcripts (written by `harness run`) and over a board's state
folder (written by `harness board run`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "fixtures" / "demo" / "ralph.toml"


def _harness(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "strategies", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=120,
        check=False,
    )


def _stats(*paths: Path) -> dict[str, Any]:
    done = _harness("stats", *map(str, paths), "--json")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert isinstance(figures, dict)
    return figures


def _demo(tmp_path: Path, name: str, *extra: str) -> Path:
    transcript = tmp_path / name
    done = _harness("run", str(DEMO), "--transcript", str(transcript), "-q", *extra)
    assert transcript.is_file(), done.stderr
    return transcript


def test_the_demo_transcript_gives_its_figures(tmp_path: Path) -> None:
    """The demo verifies at its first attempt in two Ralph iterations, after one claim the
    feature-list check sent back, for $0.035355."""
    figures = _stats(_demo(tmp_path, "demo.jsonl"))
    assert {k: figures[k] for k in ("runs", "verified_runs", "tasks", "verified_tasks")} == {
        "runs": 1,
        "verified_runs": 1,
        "tasks": 1,
        "verified_tasks": 1,
    }
    assert figures["first_attempt_rate"] == 1.0
    assert figures["attempts_per_verified_task"] == 1.0
    assert figures["iterations_per_verified_task"] == 2.0
    assert figures["cost_per_verified_task"] == pytest.approx(0.035355)
    assert figures["halt_causes"] == {}
    (check,) = figures["rejections_per_check"]
    assert check.startswith("Every feature in feature_list.json")
    assert figures["rejections_per_check"][check] == 1


def test_a_failed_attempt_counts_and_its_cost_is_paid_by_the_verified_task(
    tmp_path: Path,
) -> None:
    """The same task run twice: first halted at two turns, then verified. One task, verified
    at its second attempt; the cost per verified task is both runs' cost."""
    failed = _demo(tmp_path, "1.jsonl", "--max-turns", "2")
    verified = _demo(tmp_path, "2.jsonl")
    figures = _stats(tmp_path)  # the folder: its transcripts by name
    assert (figures["runs"], figures["verified_runs"], figures["tasks"]) == (2, 1, 1)
    assert figures["verified_rate"] == 0.5
    assert figures["first_attempt_rate"] == 0.0
    assert figures["attempts_per_verified_task"] == 2.0
    assert figures["iterations_per_verified_task"] == 3.0
    assert figures["halt_causes"] == {"BudgetExceeded(max_turns)": 1}
    alone = _stats(failed)["cost_usd"] + _stats(verified)["cost_usd"]
    assert figures["cost_per_verified_task"] == pytest.approx(alone)
    assert alone > 0.035355


def test_a_best_of_run_counts_its_attempts_up_to_the_winner(tmp_path: Path) -> None:
    """The best-of demo verifies at its third attempt (one wrong fix, one that empties the
    protected test): one run, but three attempts and three iterations for the verified task,
    not a first-attempt success; each attempt's claims sent back count."""
    transcript = tmp_path / "best-of.jsonl"
    spec = ROOT / "fixtures" / "best_of" / "best_of.toml"
    done = _harness("run", str(spec), "--transcript", str(transcript), "-q")
    assert transcript.is_file(), done.stderr
    figures = _stats(transcript)
    assert (figures["runs"], figures["verified_runs"], figures["tasks"]) == (1, 1, 1)
    assert figures["first_attempt_rate"] == 0.0
    assert figures["attempts_per_verified_task"] == 3.0
    assert figures["iterations_per_verified_task"] == 3.0
    assert sum(figures["rejections_per_check"].values()) == 2


def test_a_board_state_folder_gives_the_figures_board_status_gives(tmp_path: Path) -> None:
    """The board fixture: five tasks, four verified at the first attempt, the release task
    sent back twice until the rejection cap; $0.0524 in all, $0.0131 per verified task (the
    figures `harness board status` prints)."""
    board = tmp_path / "board"
    shutil.copytree(ROOT / "fixtures" / "board", board)
    done = _harness("board", "run", str(board))
    assert (board / ".board" / "board.db").is_file(), done.stderr
    for where in (board, board / ".board"):
        figures = _stats(where)
        assert (figures["runs"], figures["verified_runs"], figures["tasks"]) == (5, 4, 5)
        assert figures["first_attempt_rate"] == 0.8
        assert figures["halt_causes"] == {"RejectionLimit": 1}
        assert figures["cost_usd"] == pytest.approx(0.0524, abs=5e-5)
        assert figures["cost_per_verified_task"] == pytest.approx(0.0131, abs=5e-5)
        assert sum(figures["rejections_per_check"].values()) == 3
    text = _harness("stats", str(board))
    assert text.returncode == 0
    assert "runs: 5 (4 verified, 80%)" in text.stdout
    assert "RejectionLimit" in text.stdout


def test_flaky_tests_a_check_reports_are_counted_by_name(tmp_path: Path) -> None:
    """A suite check's FLAKY verdict names its tests in a ``flaky`` list; each is counted."""
    lines = [
        {"event": "run.started", "at": 0.0, "run_id": "r1", "task": "t", "strategy": "loop"},
        {"event": "turn.finished", "at": 0.1, "agent": "a", "iteration": 1, "turn": 1,
         "response": {"text": "done", "usage": {"cost_usd": 0.5}}},
        {"event": "check.passed", "at": 0.2, "agent": "a", "turn": 1, "flaky": ["test_net"]},
        {"event": "check.failed", "at": 0.3, "agent": "a", "turn": 2, "reason": "r",
         "flaky": [{"name": "test_net"}, {"name": "test_clock"}]},
        {"event": "verdict.reached", "at": 0.4, "round": 1, "passed": False,
         "flaky_tests": ["test_clock"]},
    ]  # fmt: skip
    path = tmp_path / "flaky.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    figures = _stats(path)
    assert figures["flaky_tests"] == {"test_net": 2, "test_clock": 2}
    assert figures["halt_causes"] == {"unfinished": 1}  # no run.halted: a crashed run
    assert figures["cost_usd"] == 0.5


def test_what_cannot_be_read_is_named_never_a_traceback_or_a_hang(tmp_path: Path) -> None:
    """A missing path is exit 2 naming it; a FIFO, a non-UTF-8 file and a line that is no
    event are skipped with a warning naming each, and the readable runs still count."""
    missing = _harness("stats", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2
    assert missing.stderr == f"harness: no such file or folder: {str(tmp_path / 'nope.jsonl')!r}\n"
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    (tmp_path / "bytes.jsonl").write_bytes(b'{"event": "run.started"\xff}\n')
    (tmp_path / "bad.jsonl").write_text('{"event": "turn.started", "at": "soon"}\n')
    good = _demo(tmp_path, "good.jsonl")
    done = _harness("stats", str(tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert json.loads(done.stdout)["runs"] == 1
    for name in ("fifo.jsonl", "bytes.jsonl", "bad.jsonl"):
        assert f"harness: skipped {tmp_path / name}" in done.stderr
    assert str(good) not in done.stderr
    nothing = _harness("stats", str(fifo))
    assert nothing.returncode == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    none = _harness("stats", str(empty))
    assert none.returncode == 2
    assert f"harness: skipped {empty}: no run found" in none.stderr
