"""The task board guards each task's verifier: a task file's `[policy] protected` paths are
recorded when its attempt starts and refused to the agent, like any run's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _board_support import make_board, task_toml

from strategies.board import Board, BoardEvent, BoardResult

pytestmark = pytest.mark.anyio


async def run(board: Board) -> tuple[BoardResult, list[BoardEvent]]:
    seen: list[BoardEvent] = []
    async with board.stream() as events:
        async for event in events:
            seen.append(event)
    return events.result, seen


async def test_a_task_attempt_refuses_its_protected_paths(tmp_path: Path) -> None:
    """The agent's write to the protected spec is refused naming the rule; the task still
    completes by its own check, and the spec is as it was in the board's workspace."""
    script: list[dict[str, Any]] = [
        {
            "text": "first, make the spec easier",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "SPEC.md", "content": "nothing"}}
            ],
        },
        {
            "text": "then the work",
            "tool_calls": [{"name": "write_file", "arguments": {"path": "t.txt", "content": "x"}}],
        },
        {"text": "t.txt is written"},
    ]
    protect = '[policy]\nprotected = ["SPEC.md"]'
    make_board(tmp_path, {"t": task_toml("t", extra=protect)}, {"t": script})
    (tmp_path / "workspace" / "SPEC.md").write_text("write t.txt\n")
    result, _ = await run(Board.from_folder(tmp_path, state=tmp_path / "state"))
    assert result.status_of("t") == "complete"
    transcript = tmp_path / "state" / "transcripts" / "t.1.jsonl"
    rows = [json.loads(line) for line in transcript.read_text().splitlines()]
    recorded = [r for r in rows if r["event"] == "protected.recorded"]
    assert [(r["rules"], r["files"]) for r in recorded] == [(["SPEC.md"], 1)]
    refused = [r["content"] for r in rows if r["event"] == "tool.called" and r["is_error"]]
    assert len(refused) == 1
    assert "SPEC.md is protected by the rule 'SPEC.md'" in refused[0]
    assert (tmp_path / "state" / "workspace" / "SPEC.md").read_text() == "write t.txt\n"
