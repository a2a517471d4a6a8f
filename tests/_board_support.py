"""Builds task boards in a temporary folder for the board tests: task files, scripted agents
(one JSONL fixture per task, or per task and attempt) and ``board.toml``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from strategies.board import BoardStore, BoardTask

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "board"

BOARD_TOML = """
[board]
workspace_template = "workspace"
heartbeat = 0.2
lease = 1.0
poll = 0.2
{settings}

[[agents]]
role = "w"
model = {{ type = "fixture", path = "scripts/{script}.jsonl" }}
"""


def task_toml(
    task_id: str,
    *,
    role: str = "w",
    priority: int = 0,
    depends_on: Sequence[str] = (),
    body: str | None = None,
    check: str | None = None,
    extra: str = "",
) -> str:
    """A task file whose check wants ``<id>.txt`` in the workspace (unless `check` says)."""
    lines = [
        f"id = {json.dumps(task_id)}",
        f"role = {json.dumps(role)}",
        f"priority = {priority}",
        f"depends_on = {json.dumps(list(depends_on))}",
        f"body = {json.dumps(body or f'write {task_id}.txt')}",
        extra,
        check or f'[[checks]]\ntype = "files"\npaths = ["{task_id}.txt"]',
    ]
    return "\n".join(lines) + "\n"


def writes(path: str, text: str = "done", **extra: Any) -> list[dict[str, Any]]:
    """A script that writes one file, then claims done."""
    return [
        {
            "text": f"writing {path}",
            "tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": text}}],
            **extra,
        },
        {"text": f"{path} is written"},
    ]


def make_board(
    root: Path,
    tasks: Mapping[str, str],
    scripts: Mapping[str, Iterable[Mapping[str, Any] | str]],
    *,
    board_toml: str | None = None,
    per_attempt: bool = False,
    settings: str = "",
) -> Path:
    """Write a board under `root`: ``tasks/<name>.toml``, ``scripts/<name>.jsonl`` (the
    agents replay ``scripts/{task}.jsonl``, or ``scripts/{task}.{attempt}.jsonl``), an empty
    ``workspace/`` template and ``board.toml``."""
    (root / "tasks").mkdir(parents=True, exist_ok=True)
    (root / "scripts").mkdir(exist_ok=True)
    (root / "workspace").mkdir(exist_ok=True)
    for name, text in tasks.items():
        (root / "tasks" / f"{name}.toml").write_text(text)
    for name, lines in scripts.items():
        body = [line if isinstance(line, str) else json.dumps(line) for line in lines]
        (root / "scripts" / f"{name}.jsonl").write_text("\n".join(body) + "\n")
    script = "{task}.{attempt}" if per_attempt else "{task}"
    (root / "board.toml").write_text(
        board_toml or BOARD_TOML.format(script=script, settings=settings)
    )
    return root


def start_run(
    store: BoardStore, tasks: Sequence[BoardTask], *, owner: str = "o", max_attempts: int = 3
) -> None:
    """Record a board run in `store` as one local agent of role ``w`` would start it."""
    store.start(
        tasks,
        owner=owner,
        pid=1,
        host="h",
        engine="local",
        agents=1,
        roles={"w"},
        max_attempts=max_attempts,
    )
