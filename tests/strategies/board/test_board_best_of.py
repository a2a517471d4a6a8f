"""A board task whose spec says ``[strategy] type = "best_of"``: its attempts run inside the
board's attempt, in copies of the task's workspace, and only the verified one's work lands."""

from __future__ import annotations

from pathlib import Path

import pytest
from _board_support import make_board, task_toml

from strategies.board import Board

pytestmark = pytest.mark.anyio

BEST_OF = """
[strategy]
type = "best_of"
n = 3
concurrency = 1

[strategy.attempt]
type = "ralph"
max_iterations = 1
"""


def _write(attempt: int, path: str, text: str) -> dict[str, object]:
    call = {"name": "write_file", "arguments": {"path": path, "content": text}}
    return {"attempt": attempt, "tool_calls": [call]}


async def test_a_board_task_runs_as_best_of_n(tmp_path: Path) -> None:
    """Attempt 1 claims done without the file and is rejected; attempt 2 writes it and is
    verified; attempt 3 never starts. The task completes, its workspace holds attempt 2's
    file and nothing of attempt 1's."""
    make_board(
        tmp_path,
        {"t": task_toml("t", extra=BEST_OF)},
        {
            "t": [
                _write(1, "notes.txt", "attempt 1 was here"),
                {"attempt": 1, "text": "done"},
                _write(2, "t.txt", "from attempt 2"),
                {"attempt": 2, "text": "t.txt is written"},
                {"attempt": 3, "text": "unused: attempt 2 was verified first"},
            ]
        },
    )
    result = await Board.from_folder(tmp_path).run()
    assert result.status_of("t") == "complete"
    workspace = tmp_path / ".board" / "workspace"
    assert (workspace / "t.txt").read_text() == "from attempt 2"
    assert not (workspace / "notes.txt").exists()
