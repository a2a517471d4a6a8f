"""`harness run` on a best-of spec: the demo shows its attempts and the winner, ``--json``
lists them, and a bad ``[strategy]`` best-of table is an error naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strategies._cli import main

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "fixtures" / "best_of"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_demo_shows_each_attempt_and_the_winner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    """Attempt 1 is rejected, attempt 2's weakened test is found and refused, attempt 3 is
    verified and applied, attempt 4 never starts; the output lists all four on one line
    each, and the template the demo copies is unchanged."""
    before = (DEMO / "workspace" / "calc.py").read_text()
    transcript = tmp_path / "demo.jsonl"
    spec = str(DEMO / "best_of.toml")
    code = main(["run", spec, "--transcript", str(transcript), "--backend", backend])
    out, err = capsys.readouterr()
    assert code == 0
    assert out.startswith("VERIFIED COMPLETE: completed")
    lines = out.splitlines()
    start = lines.index("  attempts (4):")
    assert [line.split(":")[0].strip() for line in lines[start + 1 : start + 5]] == [
        "attempt 1",
        "attempt 2",
        "attempt 3",
        "attempt 4",
    ]
    assert "(1 of 2 tests)" not in lines[start + 1]  # first_verified measures only the winner
    assert "Protected files were changed" in lines[start + 2]
    assert lines[start + 3].endswith("(2 of 2 tests) [applied]")
    assert "before it started: attempt 3 was verified first" in lines[start + 4]
    assert "  winner: attempt 3, applied to the workspace (calc.py)" in lines
    assert "attempt 2 of 4 started in a copy" in err
    assert "[attempt 2] protected files changed: tests/test_calc.py" in err
    assert "attempt 3 applied to the workspace (1 files)" in err
    names = [json.loads(line)["event"] for line in transcript.read_text().splitlines()]
    assert names.count("attempt.started") == 3
    assert names.count("attempt.finished") == 4
    assert names[-3:] == ["check.passed", "attempt.applied", "run.halted"]
    assert (DEMO / "workspace" / "calc.py").read_text() == before


def test_json_lists_the_attempts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--json`` has an ``attempts`` list: each attempt's halt, files, and fate."""
    code = main(["run", str(DEMO / "best_of.toml"), "--json", "-q"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [(a["attempt"], a["verified"], a["won"], a["applied"]) for a in data["attempts"]] == [
        (1, False, False, False),
        (2, False, False, False),
        (3, True, True, True),
        (4, False, False, False),
    ]
    assert data["attempts"][2]["changed"] == ["calc.py"]
    assert data["attempts"][2]["progress"] == {
        "done": 2,
        "total": 2,
        "unit": "tests",
        "failing": [],
    }
    assert data["attempts"][3]["halt"]["type"] == "Cancelled"
    assert data["turns"] == 8


BASE = """
prompt = "make done.txt"
workspace = "ws"
[model]
type = "fixture"
path = "script.jsonl"
[[checks]]
type = "files"
paths = ["done.txt"]
[strategy]
type = "best_of"
"""


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("n = 0", "strategy: 'n' must be a positive int (got 0)"),
        ('pick = "fastest"', "strategy.pick must be one of"),
        ('isolation = "vm"', "strategy.isolation must be one of"),
        ("concurrency = -1", "strategy: 'concurrency' must be a positive int"),
        ("attempt_budget = { max_turn = 3 }", "strategy.attempt_budget: unknown key 'max_turn'"),
        ('attempt = { type = "best_of" }', "strategy.attempt: 'type' must not be best_of"),
        (
            'attempt = { type = "ralph", max_iterations = 0 }',
            "strategy.attempt: 'max_iterations' must be a positive int",
        ),
        ("tries = 3", "strategy: unknown key 'tries'"),
    ],
)
def test_a_bad_best_of_table_names_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, message: str
) -> None:
    """`harness check` and `harness run` refuse the table the same way, naming the key."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "script.jsonl").write_text('{"attempt": 1, "text": "done"}\n')
    spec = tmp_path / "spec.toml"
    spec.write_text(BASE + table + "\n")
    for command in ("check", "run"):
        assert main([command, str(spec)]) == 2
        assert message in capsys.readouterr().err
