"""The stop hook guards the verifier too: its first invocation for a session records the
protected paths and the baselines in its state folder, and every later stop of that session
is judged against them."""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from strategies import Spec, load_spec
from strategies._cli._hooks._stop import claude_stop, register

PAYLOADS = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"
TESTS = """\
import unittest

from calc import add, sub


class TestCalc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 2), 4)

    def test_sub(self):
        self.assertEqual(sub(3, 1), 2)

    def test_legacy(self):
        self.assertEqual(add(0.1, 0.2), 0.3)
"""


def code(root: Path, sub: str) -> None:
    text = f"def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return {sub}\n"
    (root / "workspace" / "calc.py").write_text(text)


@pytest.fixture
def setup(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    (workspace / "tests").mkdir(parents=True)
    (workspace / "tests" / "__init__.py").write_text("")
    (workspace / "tests" / "test_calc.py").write_text(TESTS)
    code(tmp_path, "0")
    (tmp_path / "spec.toml").write_text(
        f"""\
prompt = "Make test_sub pass."

[policy]
protected = ["tests/**"]

[[checks]]
type = "test_suite"
command = ["{sys.executable}", "-m", "unittest", "-v"]
baseline = true
must_pass = ["test_sub"]
"""
    )
    return tmp_path


def fresh_spec(root: Path) -> Spec:
    """The spec as each hook process loads it anew (its checks hold no memory of the last)."""
    return load_spec(root / "spec.toml", purpose="checks")


def payload(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PAYLOADS / "stop.json").read_text())
    data["cwd"] = str(root / "workspace")
    del data["transcript_path"]
    data["last_assistant_message"] = "Done."
    return data


@pytest.mark.anyio
async def test_the_first_stop_records_and_later_stops_are_judged_against_it(
    setup: Path,
) -> None:
    """The first stop takes the baseline (test_legacy already failing) and records tests/;
    a later stop that weakened test_sub is blocked naming the file, with the pristine test
    still failing; fixing the code and restoring the test lets the agent stop although
    test_legacy still fails."""
    state = setup / "state"
    first = await claude_stop(payload(setup), fresh_spec(setup), state_dir=state)
    assert first.block
    assert first.reason is not None
    assert "must_pass tests not passing: test_sub" in first.reason
    test_file = setup / "workspace" / "tests" / "test_calc.py"
    test_file.write_text(TESTS.replace("self.assertEqual(sub(3, 1), 2)", "pass"))
    tampered = await claude_stop(payload(setup), fresh_spec(setup), state_dir=state)
    assert tampered.block
    assert tampered.reason is not None
    assert "tests/test_calc.py (modified; protected by 'tests/**')" in tampered.reason
    assert "test_sub (tests.test_calc.TestCalc.test_sub failed)" in tampered.reason
    test_file.write_text(TESTS)
    code(setup, "a - b")
    done = await claude_stop(payload(setup), fresh_spec(setup), state_dir=state)
    assert not done.block, done.reason
    (record,) = state.glob("*.verifier")
    assert (record / "protected" / "manifest.json").is_file()
    stored = json.loads((record / "baseline-0.json").read_text())
    assert stored["results"]["outcomes"]["tests.test_calc.TestCalc.test_legacy"] == "failed"


def start_payload(root: Path) -> dict[str, Any]:
    return {
        "session_id": json.loads((PAYLOADS / "stop.json").read_text())["session_id"],
        "cwd": str(root / "workspace"),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }


def cli(
    root: Path,
    kind: str,
    stdin: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="harness")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        ["hook", kind, "--spec", str(root / "spec.toml"), "--state-dir", str(root / "state")]
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(stdin)))
    code = args.handler(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_session_start_hook_takes_the_baseline_before_the_agent_works(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `claude-start`, a test the agent broke before its first stop is broken, not a
    failure that predates the task; a second start keeps the record; nothing reaches the
    agent's context (stdout)."""
    code_, out, err = cli(setup, "claude-start", start_payload(setup), capsys, monkeypatch)
    assert (code_, out) == (0, "")
    assert "recorded 2 protected paths and the baselines" in err
    (setup / "workspace" / "calc.py").write_text(  # sub fixed, add broken
        "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
    )
    code_, out, err = cli(setup, "claude-start", start_payload(setup), capsys, monkeypatch)
    assert "recorded before; it is kept" in err
    code_, out, _ = cli(setup, "claude-stop", payload(setup), capsys, monkeypatch)
    assert code_ == 0
    answer = json.loads(out)
    assert answer["decision"] == "block"
    assert (
        "tests that passed before the run no longer pass: tests.test_calc.TestCalc.test_add"
        in answer["reason"]
    )


def test_a_damaged_record_is_a_non_blocking_error_naming_it(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli(setup, "claude-start", start_payload(setup), capsys, monkeypatch)[0] == 0
    (record,) = (setup / "state").glob("*.verifier")
    (record / "baseline-0.json").write_text("{not json")
    code_, out, err = cli(setup, "claude-stop", payload(setup), capsys, monkeypatch)
    assert (code_, out) == (1, "")
    assert "baseline-0.json cannot be used" in err
    assert "delete it to take the baseline again" in err


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ({"session_id": ""}, "'session_id' must be a non-empty string"),
        ({"session_id": "s", "hook_event_name": "Stop"}, "must be 'SessionStart'"),
    ],
)
def test_a_start_payload_it_cannot_use_is_a_non_blocking_error(
    setup: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stdin: dict[str, Any],
    message: str,
) -> None:
    code_, out, err = cli(setup, "claude-start", stdin, capsys, monkeypatch)
    assert (code_, out) == (1, "")
    assert message in err
