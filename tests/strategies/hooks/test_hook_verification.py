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

PAYLOADS = Path(__file__).resolve().parents[3] / "fixtures" / "hooks"
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


UNITTEST = f'command = ["{sys.executable}", "-m", "unittest", "-v"]'


def project(root: Path, tests: str, spec: str) -> Path:
    """`root` with a workspace holding `tests` as tests/test_calc.py and calc.py, and
    `spec` as spec.toml."""
    workspace = root / "workspace"
    (workspace / "tests").mkdir(parents=True)
    (workspace / "tests" / "__init__.py").write_text("")
    (workspace / "tests" / "test_calc.py").write_text(tests)
    code(root, "0")
    (root / "spec.toml").write_text(spec)
    return root


@pytest.fixture
def setup(tmp_path: Path) -> Path:
    return project(
        tmp_path,
        TESTS,
        f"""\
prompt = "Make test_sub pass."

[policy]
protected = ["tests/**"]

[[checks]]
type = "test_suite"
{UNITTEST}
baseline = true
must_pass = ["test_sub"]
""",
    )


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


def test_a_baseline_of_another_command_is_never_used(
    setup: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spec edited within a session names another suite: the stored baseline's failures
    would excuse this suite's, so the stop says so rather than judging with it."""
    assert cli(setup, "claude-start", start_payload(setup), capsys, monkeypatch)[0] == 0
    (record,) = (setup / "state").glob("*.verifier")
    stored = json.loads((record / "baseline-0.json").read_text())
    (record / "baseline-0.json").write_text(json.dumps({**stored, "command": "`make test`"}))
    code_, out, err = cli(setup, "claude-stop", payload(setup), capsys, monkeypatch)
    assert (code_, out) == (1, "")
    assert "it is the baseline of `make test`, not of `" in err


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


PLAIN = TESTS.replace(
    "\n    def test_legacy(self):\n        self.assertEqual(add(0.1, 0.2), 0.3)\n", ""
)


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    """A suite check with no baseline, no must_pass and nothing protected: only its last
    verdict decides what runs first."""
    spec = f'prompt = "Make the tests pass."\n\n[[checks]]\ntype = "test_suite"\n{UNITTEST}\n'
    return project(tmp_path, PLAIN, spec)


def blocked(result: tuple[int, str, str]) -> str:
    code_, out, _ = result
    assert code_ == 0
    answer = json.loads(out)
    assert answer["decision"] == "block"
    reason: str = answer["reason"]
    return reason


def test_a_stop_after_a_failing_stop_runs_the_tests_that_failed_first(
    plain: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each stop is a fresh hook invocation; the second still rejects in seconds: it runs
    only test_sub, which failed at the first stop's whole suite, and says so."""
    first = blocked(cli(plain, "claude-stop", payload(plain), capsys, monkeypatch))
    assert "tests run first" not in first
    assert "failing: tests.test_calc.TestCalc.test_sub" in first
    second = blocked(cli(plain, "claude-stop", payload(plain), capsys, monkeypatch))
    assert "still fails 1 of the tests run first (ran 1 test: failures=1)" in second
    assert (
        "tests that failed at the last verdict still fail: tests.test_calc.TestCalc.test_sub"
        in second
    )
    assert (
        "-f -k tests.test_calc.TestCalc.test_sub`: tests.test_calc.TestCalc.test_sub failed;"
    ) in second


@pytest.mark.parametrize(
    ("stored", "why"),
    [
        ("{not json", "not valid JSON: Expecting property name"),
        ('{"command": "x", "failing": "test_sub", "names": []}', "'failing' must be a list"),
        (
            '{"command": "make test", "failing": ["t"], "names": []}',
            "it is the last verdict of `make test`",
        ),
    ],
)
def test_a_stored_last_verdict_it_cannot_use_is_ignored_and_the_whole_suite_runs(
    plain: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stored: str,
    why: str,
) -> None:
    """A damaged or foreign last verdict only costs speed: the stop is judged by the whole
    suite, a note on stderr names the file, and the next whole run replaces it."""
    blocked(cli(plain, "claude-stop", payload(plain), capsys, monkeypatch))
    (record,) = (plain / "state").glob("*.verifier")
    kept = record / "last-verdict-0.json"
    kept.write_text(stored)
    result = cli(plain, "claude-stop", payload(plain), capsys, monkeypatch)
    reason = blocked(result)
    assert "tests run first" not in reason
    assert "failing: tests.test_calc.TestCalc.test_sub" in reason
    assert f"the last verdict in {kept} is not used ({why}" in result[2]
    assert json.loads(kept.read_text())["failing"] == ["tests.test_calc.TestCalc.test_sub"]


def test_an_accepted_stop_keeps_a_verdict_with_no_failure(
    plain: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a stop the whole suite accepted, nothing runs first: a later stop that breaks
    test_sub again and test_add is judged by the whole suite, naming both."""
    blocked(cli(plain, "claude-stop", payload(plain), capsys, monkeypatch))
    code(plain, "a - b")
    code_, out, _ = cli(plain, "claude-stop", payload(plain), capsys, monkeypatch)
    assert (code_, out) == (0, "")
    (record,) = (plain / "state").glob("*.verifier")
    kept = json.loads((record / "last-verdict-0.json").read_text())
    assert kept["failing"] == []
    assert "tests.test_calc.TestCalc.test_add" in kept["names"]
    (plain / "workspace" / "calc.py").write_text(
        "def add(a, b):\n    return 0\n\n\ndef sub(a, b):\n    return 0\n"
    )
    reason = blocked(cli(plain, "claude-stop", payload(plain), capsys, monkeypatch))
    assert "tests run first" not in reason
    assert "first ran only" not in reason
    assert "failing: tests.test_calc.TestCalc.test_add, tests.test_calc.TestCalc.test_sub" in reason
