"""Transcripts for the viewer's tests: real runs from the command line, and hand-made events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from strategies._cli import main

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "demo"

# Hostile text, as a model or a tool might produce it: if any of it were not escaped, a
# script would run, an element would appear or an attribute would break out of its quotes.
HOSTILE = "<script>document.title='pwned'</script>"
HOSTILE_IMG = "<img src=x onerror=\"document.title='pwned2'\">"
HOSTILE_ATTR = '"><svg onload="document.title=\'pwned3\'">'
HOSTILE_CLOSE = "</pre></code></script></style><!-- ]]>"


def demo_transcript(tmp_path: Path) -> Path:
    """The demo's Ralph run (two iterations, a rejected claim, then verified)."""
    path = tmp_path / "demo.jsonl"
    assert main(["run", str(DEMO / "ralph.toml"), "--transcript", str(path), "-q"]) == 0
    return path


def _lines(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


SELF_VERIFYING = """
prompt = "Write done.txt. {hostile}"
workspace = "ws"
tools = ["read_file", "write_file"]
[model]
type = "fixture"
path = "builder.jsonl"
[strategy]
type = "self_verifying"
max_rounds = 3
evaluator_must_use_tools = false
[strategy.evaluator]
type = "fixture"
path = "evaluator.jsonl"
[[sensors]]
type = "repeated_tool_call"
limit = 5
warn_at = 2
[[checks]]
type = "files"
paths = ["done.txt"]
"""


def self_verifying_transcript(tmp_path: Path) -> Path:
    """A SelfVerifying run with a tool error, hostile text in every place a model or tool can
    put it, a sensor warning, an evaluator FAIL then PASS, and prices unknown from turn 7."""
    (tmp_path / "ws").mkdir()
    read = {"name": "read_file", "arguments": {"path": "done.txt"}}
    builder: list[dict[str, Any]] = [
        {
            "text": "Looking first.",
            "tool_calls": [{"id": "a1", "name": "read_file", "arguments": {"path": "nope.txt"}}],
            "usage": {"input_tokens": 800, "output_tokens": 30, "cost_usd": 0.002},
        },
        {
            "text": f"Writing it. {HOSTILE}",
            "tool_calls": [
                {
                    "id": "a2",
                    "name": "write_file",
                    "arguments": {
                        "path": "done.txt",
                        "content": f"{HOSTILE}\n{HOSTILE_IMG}\n{HOSTILE_ATTR}\n{HOSTILE_CLOSE}",
                    },
                }
            ],
            "usage": {"input_tokens": 1200, "output_tokens": 140, "cost_usd": 0.004},
        },
        {
            "tool_calls": [read],
            "usage": {"input_tokens": 1400, "output_tokens": 20, "cost_usd": 0.0045},
        },
        {
            "tool_calls": [read],
            "usage": {"input_tokens": 1500, "output_tokens": 20, "cost_usd": 0.0047},
        },
        {"text": "Done.", "usage": {"input_tokens": 1600, "output_tokens": 15, "cost_usd": 0.005}},
        {
            "text": "Fixed.",
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "done.txt", "content": "ok"}}
            ],
            "usage": {"input_tokens": 1900, "output_tokens": 60},
        },
        {"text": "Done again.", "usage": {"input_tokens": 2000, "output_tokens": 10}},
    ]
    evaluator = [
        {
            "text": f"It holds {HOSTILE_ATTR}\nVERDICT: FAIL",
            "usage": {"input_tokens": 600, "output_tokens": 25, "cost_usd": 0.001},
        },
        {
            "text": "Good.\nVERDICT: PASS",
            "usage": {"input_tokens": 650, "output_tokens": 8, "cost_usd": 0.001},
        },
    ]
    (tmp_path / "builder.jsonl").write_text(_lines(builder))
    (tmp_path / "evaluator.jsonl").write_text(_lines(evaluator))
    hostile = HOSTILE.replace("'", "")
    (tmp_path / "spec.toml").write_text(SELF_VERIFYING.format(hostile=hostile))
    path = tmp_path / "sv.jsonl"
    assert main(["run", str(tmp_path / "spec.toml"), "--transcript", str(path), "-q"]) == 0
    return path


def write_events(path: Path, rows: list[dict[str, Any]], tail: str = "") -> Path:
    """A hand-made transcript: `rows` as lines, then `tail` (a cut-off line) verbatim."""
    path.write_text(_lines(rows) + tail)
    return path


def usage(inp: int = 10, out: int = 5, cost: float | None = 0.001) -> dict[str, Any]:
    return {"input_tokens": inp, "output_tokens": out, "cached_tokens": 0, "cost_usd": cost}


def started(run_id: str = "r1", task: str = "the task") -> dict[str, Any]:
    return {
        "event": "run.started",
        "at": 0.0,
        "run_id": run_id,
        "task": task,
        "strategy": "loop",
        "workspace": None,
        "check": "a check",
    }


def turn(
    n: int,
    text: str = "",
    calls: list[dict[str, Any]] | None = None,
    agent: str = "builder",
    iteration: int = 1,
) -> list[dict[str, Any]]:
    response: dict[str, Any] = {"text": text, "usage": usage()}
    if calls:
        response["tool_calls"] = calls
    return [
        {"event": "turn.started", "at": n * 1.0, "agent": agent, "iteration": iteration, "turn": n},
        {
            "event": "turn.finished",
            "at": n + 0.5,
            "agent": agent,
            "iteration": iteration,
            "turn": n,
            "response": response,
        },
    ]


def tool(
    n: int, call: dict[str, Any], content: str, is_error: bool = False, agent: str = "builder"
) -> dict[str, Any]:
    return {
        "event": "tool.called",
        "at": n + 0.6,
        "agent": agent,
        "turn": n,
        "call": call,
        "content": content,
        "is_error": is_error,
    }


def halted(verified: bool = True, turns: int = 1, cost: float | None = 0.001) -> dict[str, Any]:
    reason = (
        {"type": "Completed", "early": False}
        if verified
        else {"type": "RejectionLimit", "rejections": 2, "last_reason": "still broken"}
    )
    return {
        "event": "run.halted",
        "at": 9.0,
        "reason": reason,
        "verified": verified,
        "turns": turns,
        "tool_calls": 0,
        "usage": usage(cost=cost),
    }
