"""A check that cannot judge the work, from the command line and in the viewer: `harness check`
exits 2 (the configuration code) when a check cannot run, and `-v` prints the traceback of a
check that raised; `harness run -v` prints it too; the viewer shows it as data; the board
calls a run halted `CheckBroken` failed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _dom import parse
from _view_support import halted, started, turn, write_events

from strategies._cli import main
from strategies.board._attempt import classify

RAISING = """
async def check(state):
    return {}["the key <b>nobody</b> set"]
"""


def _spec(tmp_path: Path, check: str, *, claims: int = 1) -> Path:
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "script.jsonl").write_text('{"text": "done"}\n' * claims)
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'prompt = "work"\nworkspace = "ws"\n[model]\ntype = "fixture"\npath = "script.jsonl"\n'
        f"[[checks]]\n{check}\n"
    )
    return spec


@pytest.fixture
def raising(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "raising_check.py").write_text(RAISING)
    monkeypatch.syspath_prepend(str(tmp_path))
    return 'type = "python"\nfunction = "raising_check:check"'


def test_harness_check_v_prints_the_traceback_of_a_check_that_raised(
    tmp_path: Path, raising: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(tmp_path, raising)
    assert main(["check", str(spec)]) == 1
    plain = capsys.readouterr().out
    assert "failed with KeyError" in plain
    assert "Traceback" not in plain
    assert main(["check", "-v", str(spec)]) == 1
    verbose = capsys.readouterr().out
    assert "Traceback (most recent call last):" in verbose
    assert 'return {}["the key <b>nobody</b> set"]' in verbose  # the line that raised


@pytest.mark.parametrize(
    ("check", "said"),
    [
        (f'type = "command"\ncommand = ["{sys.executable}", "-m", "no_such_runner_xyz"]', ""),
        ('type = "command"\ncommand = ["sh", "-c", "exit 127"]', ""),
        ('type = "test_suite"\ncommand = "no-such-runner-of-the-tests -q"', "not on PATH"),
    ],
)
def test_harness_check_exits_2_when_a_check_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], check: str, said: str
) -> None:
    """Not 1 ("the work is not done"): 2, the configuration code, whether the program is
    missing (found before running anything) or the command could not start."""
    assert main(["check", str(_spec(tmp_path, check))]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert err.startswith("harness: ")


def test_harness_run_v_prints_the_traceback_and_halts_check_broken(
    tmp_path: Path, raising: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three claims, the same KeyError each time: the run halts `CheckBroken` (exit 1), and
    with -v each traceback is printed, escaped."""
    spec = _spec(tmp_path, raising, claims=3)
    assert main(["run", str(spec), "-v", "--transcript", str(tmp_path / "t.jsonl")]) == 1
    captured = capsys.readouterr()
    assert "the completion check raised the same error at 3 claims in a row" in captured.out
    assert captured.err.count("the completion check raised (builder, turn ") == 3
    assert "Traceback (most recent call last):" in captured.err


def test_the_viewer_shows_the_traceback_as_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = 'Traceback (most recent call last):\n  File "c.py", line 2\nKeyError: "<b>x</b>"'
    failed = {
        "event": "check.failed",
        "at": 1.0,
        "agent": "builder",
        "turn": 1,
        "check": "c",
        "reason": "the completion check C failed with KeyError",
        "error": trace,
    }
    rows = [started(), *turn(1, "done"), failed, halted(False)]
    path = write_events(tmp_path / "t.jsonl", rows)
    out = tmp_path / "t.html"
    assert main(["view", str(path), "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert "<b>x</b>" not in html  # data, never markup
    assert 'KeyError: "<b>x</b>"' in parse(html).text()
    assert 'File "c.py", line 2' in parse(html).text()


def test_the_board_calls_a_broken_check_failed() -> None:
    assert classify({"type": "CheckBroken", "claims": 3, "message": "m"}, False) == "failed"
