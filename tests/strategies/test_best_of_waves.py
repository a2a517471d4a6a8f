"""`BestOf(waves=2)`: when no attempt of the first wave is verified, the second wave's task
carries a digest of the failed attempts (what they changed, the tests they broke or left
failing, the check's last reason, how they ended), bounded in size, and replayed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _git_support import init_repo

from checks import CommandCheck, TestSuiteCheck
from harness import Event, Harness, ScriptedModelClient, workspace_tools
from harness.events import TranscriptReader, WaveStarted
from harness.testing import FakeClock, ListSink
from strategies import BestOf, NoAttemptVerified, Ralph
from strategies._best_of_digest import HEADING, MAX_DIGEST, PER_ATTEMPT, FailedAttempt, digest
from strategies._best_of_ranking import FileChange
from termination import Budget, TerminationPolicy

pytestmark = pytest.mark.anyio

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a * b\n"
CHECK = "import calc\n\nassert calc.add(2, 3) == 5, 'add is wrong'\n"
TASK = "Fix add in calc.py."


def write(attempt: int, path: str, content: str, **extra: Any) -> dict[str, Any]:
    call = {"name": "write_file", "arguments": {"path": path, "content": content}}
    return {"attempt": attempt, "tool_calls": [call], **extra}


def claim(attempt: int) -> dict[str, Any]:
    return {"attempt": attempt, "text": "Done."}


def best_of(
    rows: Sequence[dict[str, Any]],
    workspace: Path,
    check: Any,
    sink: ListSink | None = None,
    transcript: Path | None = None,
    **kw: Any,
) -> Harness:
    return Harness(
        model=ScriptedModelClient.from_responses(rows),
        policy=TerminationPolicy(
            completion_check=check, protected=["check_calc.py"], budget=Budget()
        ),
        strategy=BestOf(strategy=Ralph(max_iterations=1), concurrency=1, **kw),
        tools=workspace_tools(),
        workspace=workspace,
        clock=FakeClock(),
        sinks=[sink] if sink is not None else [],
        transcript=transcript,
    )


# The second wave's first request must carry the digest: the fixture fails the run if not.
TOLD = [
    HEADING,
    "### Attempt 1 (wave 1)",
    "### Attempt 2 (wave 1)",
    "- changed: calc.py (+1 -1)",
    "- changed: no files",
    "add is wrong",
    "- how it ended: ralph ran 1 iterations and the check still fails",
]
TWO_WAVES = [
    write(1, "calc.py", WRONG),
    claim(1),
    claim(2),
    write(3, "calc.py", FIXED, expect={"any_message_contains": TOLD}),
    claim(3),
    write(4, "calc.py", FIXED),
    claim(4),
]


async def test_the_second_wave_is_told_what_the_first_tried_and_replays(tmp_path: Path) -> None:
    """Wave 1's two attempts fail (one writes a wrong add, one changes nothing); wave 2
    starts with their digest after the task (the scripted model checks its request holds
    it), attempt 3 is verified and applied, attempt 4 never starts. ``attempt.wave`` holds
    the digest; two runs from the same fixture write the same transcript."""
    keys = []
    for name in ("one", "two"):
        repo = init_repo(tmp_path / name, {"calc.py": BUGGY, "check_calc.py": CHECK})
        check = CommandCheck(["python3", "check_calc.py"], timeout=60)
        sink, transcript = ListSink(), tmp_path / f"{name}.jsonl"
        result = await best_of(TWO_WAVES, repo, check, sink, transcript, n=2, waves=2).run(TASK)
        assert result.verified
        assert [(a.number, a.wave, a.verified, a.applied) for a in result.attempts] == [
            (1, 1, False, False),
            (2, 1, False, False),
            (3, 2, True, True),
            (4, 2, False, False),
        ]
        assert (repo / "calc.py").read_text() == FIXED
        waves = [e for e in sink.events if isinstance(e, WaveStarted)]
        assert [(e.wave, e.first, e.last) for e in waves] == [(2, 3, 4)]
        assert all(needle in waves[0].digest for needle in TOLD)
        assert [e for _, e in TranscriptReader(transcript) if isinstance(e, WaveStarted)] == waves
        text = transcript.read_text().replace(str(repo), "<repo>").replace(result.run_id, "<r>")
        keys.append([Event.from_dict(json.loads(line)).replay_key() for line in text.splitlines()])
    assert keys[0] == keys[1]


async def test_a_verified_first_wave_starts_no_second(tmp_path: Path) -> None:
    """Attempt 1 is verified: no second wave starts, and its attempts are not listed."""
    repo = init_repo(tmp_path / "repo", {"calc.py": BUGGY, "check_calc.py": CHECK})
    check = CommandCheck(["python3", "check_calc.py"], timeout=60)
    sink = ListSink()
    rows = [write(1, "calc.py", FIXED), claim(1), claim(2), claim(3)]
    result = await best_of(rows, repo, check, sink, n=1, waves=3).run(TASK)
    assert [(a.number, a.wave, a.applied) for a in result.attempts] == [(1, 1, True)]
    assert not [e for e in sink.events if isinstance(e, WaveStarted)]


LEGACY = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"
TESTS = """import unittest

from calc import add, mul


class TestCalc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)
"""


async def test_the_digest_names_the_tests_an_attempt_broke_and_left_failing(
    tmp_path: Path,
) -> None:
    """With a baseline (test_mul failing before the run), attempt 1 breaks add and leaves
    mul wrong: the second wave is told it broke test_add and left test_mul failing; attempt
    2 does the same, and the halt counts both waves' attempts."""
    repo = init_repo(tmp_path / "repo", {"calc.py": LEGACY, "test_calc.py": TESTS})
    check = TestSuiteCheck("python3 -m unittest -v", baseline=True, timeout=120)
    broken = LEGACY.replace("return a + b\n\n", "return a - b\n\n", 1)
    rows = [write(1, "calc.py", broken), claim(1), write(2, "calc.py", broken), claim(2)]
    sink = ListSink()
    result = await best_of(rows, repo, check, sink, n=1, waves=2).run("Fix mul in calc.py.")
    assert isinstance(result.halt_reason, NoAttemptVerified)
    assert result.halt_reason.attempts == 2
    told = next(e for e in sink.events if isinstance(e, WaveStarted)).digest
    lines = told.splitlines()
    broke = next(line for line in lines if line.startswith("- tests it broke: "))
    left = next(line for line in lines if line.startswith("- tests it left failing: "))
    assert "test_add" in broke
    assert "test_mul" not in broke
    assert "test_mul" in left
    assert "test_add" not in left
    assert (repo / "calc.py").read_text() == LEGACY


def test_the_digest_is_bounded_and_counts_what_it_leaves_out() -> None:
    """Twenty failed attempts with long reasons and many files: each part is at most
    `PER_ATTEMPT` characters, the whole at most `MAX_DIGEST`, and what does not fit is
    counted."""
    many = tuple(FileChange(f"src/module_{i}.py", 3, 1) for i in range(30))
    failed = [
        FailedAttempt(k, 1, "the check still fails", many, ("t1",) * 20, (), "x\n" * 5000)
        for k in range(1, 21)
    ]
    told = digest(failed)
    assert len(told) <= MAX_DIGEST
    assert "more failed attempts left out)" in told
    assert "and 22 more files" in told
    assert "t1, t1, t1, t1, t1, t1, t1, t1 and 12 more" in told
    assert len(failed[0].describe(PER_ATTEMPT)) <= PER_ATTEMPT
    assert digest([]) == ""
