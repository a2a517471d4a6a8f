"""`harness run --record PATH`: a run from the command line is recorded, and replays the same."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness import read_transcript
from strategies._cli import main

SPEC = """\
prompt = "Write hello to greeting.txt."
workspace = "ws"
tools = ["write_file", "read_file"]

[model]
type = "fixture"
path = "{fixture}"

[[checks]]
type = "files"
paths = ["greeting.txt"]
"""

SCRIPT = [
    {"text": "I think I am done."},
    {
        "tool_calls": [
            {
                "id": "w1",
                "name": "write_file",
                "arguments": {"path": "greeting.txt", "content": "hi"},
            }
        ],
        "usage": {"input_tokens": 50, "output_tokens": 9, "cost_usd": 0.001},
    },
    {"text": "Now it is written.", "usage": {"input_tokens": 80, "output_tokens": 4}},
]


def events(path: Path) -> list[dict[str, Any]]:
    rows = read_transcript(path)
    for row in rows:
        row.pop("at", None)
        row.pop("run_id", None)
    return rows


def test_a_recorded_command_line_run_replays_to_the_same_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--record writes one fixture line per model call; running on it gives the same events."""
    (tmp_path / "script.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SCRIPT))
    (tmp_path / "run.toml").write_text(SPEC.format(fixture="script.jsonl"))
    (tmp_path / "replay.toml").write_text(SPEC.format(fixture="recorded.jsonl"))
    recorded = tmp_path / "recorded.jsonl"

    (tmp_path / "ws").mkdir()
    first = ["run", str(tmp_path / "run.toml"), "--record", str(recorded), "-q"]
    assert main([*first, "--transcript", str(tmp_path / "first.jsonl")]) == 0
    lines = [json.loads(line) for line in recorded.read_text().splitlines()]
    assert [line["agent"] for line in lines] == ["builder"] * 3
    assert all({"request_digest", "usage", "delay"} <= set(line) for line in lines)
    assert all(line["delay"] > 0 for line in lines)  # each call's latency on the system clock

    shutil.rmtree(tmp_path / "ws")
    (tmp_path / "ws").mkdir()
    again = ["run", str(tmp_path / "replay.toml"), "-q"]
    assert main([*again, "--transcript", str(tmp_path / "second.jsonl")]) == 0
    assert events(tmp_path / "second.jsonl") == events(tmp_path / "first.jsonl")
    capsys.readouterr()
