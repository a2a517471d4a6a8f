"""`harness run --json`: one JSON object on stdout for CI, every line for a person on stderr."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import read_transcript
from strategies._cli import main

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "fixtures" / "demo"

KEYS = {
    "exit_code",
    "verified",
    "halt",
    "run_id",
    "turns",
    "tool_calls",
    "iterations",
    "usage",
    "elapsed",
    "spent",
    "verified_cost",
    "transcript",
    "workspace",
    "workspace_removed",
    "attempts",
    "error",
}

SPEC = """
prompt = "make done.txt"
workspace = "ws"
[model]
type = "fixture"
path = "script.jsonl"
[strategy]
type = "ralph"
max_iterations = 2
[[checks]]
type = "files"
paths = ["done.txt"]
"""


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = main(["run", *args, "--json"])
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 1, captured.out
    data = json.loads(lines[0])
    assert set(data) == KEYS
    assert data["exit_code"] == code
    return code, data, captured.err


def test_a_verified_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The demo: verified, the halt's type and fields and description, the counts, the
    usage with its cost, and absolute paths; the human summary and progress go to stderr."""
    transcript = tmp_path / "demo.jsonl"
    code, data, err = run_json(capsys, str(DEMO / "ralph.toml"), "--transcript", str(transcript))
    assert code == 0
    assert data["verified"] is True
    assert data["halt"] == {
        "type": "Completed",
        "early": False,
        "description": "completed: the completion check passed",
    }
    assert (data["turns"], data["tool_calls"], data["iterations"]) == (6, 6, 2)
    assert data["usage"] == {
        "input_tokens": 8000,
        "output_tokens": 757,
        "cached_tokens": 0,
        "total_tokens": 8757,
        "cost_usd": pytest.approx(0.035355),
    }
    assert isinstance(data["elapsed"], float)
    assert data["transcript"] == str(transcript.resolve())
    assert Path(data["workspace"]).is_absolute()
    assert data["workspace_removed"] is True  # the demo's temporary copy of its template
    assert not Path(data["workspace"]).exists()
    assert data["run_id"] == read_transcript(transcript)[0]["run_id"]
    assert data["error"] is None
    assert "VERIFIED COMPLETE: completed" in err
    assert "check failed: 2 of 3 features" in err


def test_an_unverified_run_with_unknown_prices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1, verified false, the strategy's own halt type with its fields, and an unknown
    cost as null (never 0)."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "script.jsonl").write_text('{"text": "done"}\n{"text": "done, really"}\n')
    (tmp_path / "spec.toml").write_text(SPEC)
    code, data, err = run_json(capsys, str(tmp_path / "spec.toml"), "-q")
    assert code == 1
    assert data["verified"] is False
    halt = data["halt"]
    assert halt["type"] == "RalphCompletionUnmet"
    assert halt["iterations"] == 2
    assert "done.txt" in halt["last_reason"]
    assert halt["description"].startswith("ralph ran 2 iterations")
    assert data["usage"]["cost_usd"] is None
    # The spec names no transcript: the run records into runs/ beside it all the same.
    assert Path(data["transcript"]).parent == tmp_path / "runs"
    assert data["workspace"] == str((tmp_path / "ws").resolve())
    assert data["workspace_removed"] is False
    assert err.startswith("NOT VERIFIED")


def test_a_spec_error_still_prints_one_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run that cannot start exits 2 with the error in the object and the run's fields null."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "spec.toml").write_text("bogus = 1\n" + SPEC)
    code, data, err = run_json(capsys, str(tmp_path / "spec.toml"))
    assert code == 2
    assert "unknown key 'bogus'" in data["error"]
    assert data["verified"] is False
    for key in ("halt", "run_id", "turns", "usage", "elapsed", "transcript", "workspace"):
        assert data[key] is None, key
    assert "unknown key 'bogus'" in err


def test_a_fixture_error_after_the_run_keeps_its_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script with lines left over fails after the run: exit 2, the error, and the result."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "script.jsonl").write_text(
        '{"tool_calls": [{"name": "write_file", "arguments": {"path": "done.txt", '
        '"content": "x"}}]}\n{"text": "done"}\n{"text": "unused"}\n'
    )
    (tmp_path / "spec.toml").write_text(SPEC)
    transcript = tmp_path / "t.jsonl"
    code, data, _ = run_json(capsys, str(tmp_path / "spec.toml"), "--transcript", str(transcript))
    assert code == 2
    assert "script.jsonl:3" in data["error"]
    assert data["halt"]["type"] == "Completed"
    assert data["turns"] == 2
    assert data["transcript"] == str(transcript.resolve())


def test_without_json_stdout_keeps_the_human_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(DEMO / "ralph.toml"), "-q"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("VERIFIED COMPLETE")
    assert "{" not in out


def test_the_documented_object_has_every_key_of_the_code() -> None:
    """docs/cli.md's `--json` example holds exactly the keys the command prints, so a reader
    who scripts against the page meets no missing or stale key."""
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = page.split("## `--json`", 1)[1]
    example = section.split("```json\n", 1)[1].split("```", 1)[0]
    assert set(json.loads(example)) == KEYS
