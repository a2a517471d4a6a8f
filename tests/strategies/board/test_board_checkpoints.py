"""The board keeps each attempt's best checkpoint: from the run's events as it finishes, from
its transcript when a later board recovers it, and across the schema change that added it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from _board_support import make_board, task_toml

from harness.checkpoints import WorkProgress
from harness.events import CheckpointSaved
from strategies.board import Board, open_store
from strategies.board._recovery import read_attempt
from strategies.board._schema import connect

pytestmark = pytest.mark.anyio


async def test_an_attempt_records_its_best_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task with ``checkpoints = true``: the attempt's record names the checkpoint of its
    rejected claim (measured 0 of 1 files: better than the unmeasured start)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    write = {"name": "write_file", "arguments": {"path": "t.txt", "content": "x"}}
    make_board(
        tmp_path,
        {"t": task_toml("t", extra="checkpoints = true")},
        {"t": [{"text": "done"}, {"tool_calls": [write]}, {"text": "done"}]},
    )
    result = await Board.from_folder(tmp_path).run()
    assert result.status_of("t") == "complete"
    with open_store(tmp_path / ".board") as store:
        (attempt,) = store.attempts("t")
    rows = [json.loads(line) for line in attempt.transcript.read_text().splitlines()]
    saved = [r for r in rows if r["event"] == "checkpoint.saved"]
    assert [r["label"] for r in saved] == [
        "run started",
        "claim rejected (builder, iteration 1, turn 1)",
    ]
    assert attempt.checkpoint == saved[1]["checkpoint"]
    assert read_attempt(attempt.transcript).checkpoint == attempt.checkpoint


def test_the_best_checkpoint_is_read_back_from_a_transcript(tmp_path: Path) -> None:
    """Ralph's rule over the transcript's ``checkpoint.saved`` lines: a later one that did no
    worse wins, a regression does not; a torn last line is ignored."""

    def saved(ident: str, done: int | None) -> str:
        progress = None if done is None else WorkProgress(done, 3, "tests")
        event = CheckpointSaved(0.0, "label", ident, "tree", 0, "snapshot", progress)
        return json.dumps(event.to_dict())

    path = tmp_path / "t.jsonl"
    path.write_text(
        "\n".join([saved("a", None), saved("b", 1), saved("c", 2), saved("d", 1), saved("e", None)])
        + '\n{"event": "checkpoint.sa'
    )
    assert read_attempt(path).checkpoint == "c"
    assert read_attempt(tmp_path / "missing.jsonl").checkpoint is None


def test_a_board_database_of_schema_1_is_brought_up_to_date(tmp_path: Path) -> None:
    """The attempts table of an older board gains the checkpoint column; nothing is lost."""
    path = tmp_path / "board.sqlite"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('schema', '1');"
        "CREATE TABLE attempts (task_id TEXT NOT NULL, number INTEGER NOT NULL, "
        "agent TEXT NOT NULL, owner TEXT NOT NULL, engine TEXT NOT NULL, "
        "started_at REAL NOT NULL, heartbeat_at REAL NOT NULL, ended_at REAL, outcome TEXT, "
        "message TEXT, halt TEXT, resume TEXT NOT NULL, transcript TEXT NOT NULL, turns INTEGER, "
        "tool_calls INTEGER, iterations INTEGER, usage TEXT, elapsed REAL, "
        "PRIMARY KEY (task_id, number));"
        "INSERT INTO attempts (task_id, number, agent, owner, engine, started_at, heartbeat_at, "
        "resume, transcript) VALUES ('t', 1, 'a', 'o', 'e', 0, 0, '{}', 't.jsonl');"
    )
    old.commit()
    old.close()
    db = connect(path)
    columns = [r["name"] for r in db.execute("PRAGMA table_info(attempts)")]
    assert "checkpoint" in columns
    assert db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == "2"
    assert db.execute("SELECT task_id, checkpoint FROM attempts").fetchall()[0][:] == ("t", None)
    db.close()
