"""`BestOf(pick="best_verified")`: several attempts verify, a ranking orders them (the
smallest change first by default), the ranking is in the result and the transcript, and the
first is applied."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _git_support import init_repo
from attrs import frozen

from checks import CommandCheck
from harness import (
    AttemptScore,
    Cancelled,
    ConfigurationError,
    Event,
    Harness,
    ScriptedModelClient,
    workspace_tools,
)
from harness.events import AttemptsRanked, AttemptWon, TranscriptReader
from harness.testing import FakeClock, ListSink
from strategies import BestOf, Ralph, Ranking, SmallestChange
from strategies._best_of_ranking import is_test_path, named_in
from termination import Budget, TerminationPolicy

pytestmark = pytest.mark.anyio

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
SMALL = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
LARGE = (
    '"""Arithmetic."""\n\n\ndef add(a, b):\n    """The sum."""\n    total = a\n'
    "    total += b\n    return total\n\n\ndef sub(a, b):\n    return a - b\n"
)
CHECK = "import calc\n\nassert calc.add(2, 3) == 5, 'add is wrong'\n"
USAGE = {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.001}
TASK = "Fix add in calc.py."


def write(attempt: int, path: str, content: str) -> dict[str, Any]:
    call = {"name": "write_file", "arguments": {"path": path, "content": content}}
    return {"attempt": attempt, "tool_calls": [call], "usage": USAGE}


def claim(attempt: int) -> dict[str, Any]:
    return {"attempt": attempt, "text": "Done.", "usage": USAGE}


def calc_repo(folder: Path) -> Path:
    return init_repo(
        folder, {"calc.py": BUGGY, "check_calc.py": CHECK, ".gitignore": "__pycache__/\n"}
    )


def best_of(
    rows: Sequence[dict[str, Any]],
    workspace: Path,
    sink: ListSink | None = None,
    transcript: Path | None = None,
    **kw: Any,
) -> Harness:
    kw.setdefault("strategy", Ralph(max_iterations=1))
    kw.setdefault("pick", "best_verified")
    return Harness(
        model=ScriptedModelClient.from_responses(rows),
        policy=TerminationPolicy(
            completion_check=CommandCheck(["python3", "check_calc.py"], timeout=60),
            protected=["check_calc.py"],
            budget=Budget(),
        ),
        strategy=BestOf(**kw),
        tools=workspace_tools(),
        workspace=workspace,
        clock=FakeClock(),
        sinks=[sink] if sink is not None else [],
        transcript=transcript,
    )


# Attempt 1 rewrites add in 6 lines and adds a helper file the task does not name; attempt
# 2 changes one line. Both are verified; attempt 1 first.
TWO_VERIFIED = [
    write(1, "calc.py", LARGE),
    write(1, "helpers.py", "ZERO = 0\n"),
    claim(1),
    write(2, "calc.py", SMALL),
    claim(2),
]


async def test_best_verified_applies_the_smaller_of_two_verified_patches_and_replays(
    tmp_path: Path,
) -> None:
    """Both attempts are verified; attempt 2's one-line change ranks above attempt 1's
    larger one with a file outside the task, and is applied. The ranking is in the result
    (each attempt's rank and score) and in ``attempt.ranked``; two runs from the same
    fixture write the same transcript, which reads back as the same events."""
    keys = []
    for name in ("one", "two"):
        repo = calc_repo(tmp_path / name)
        transcript = tmp_path / f"{name}.jsonl"
        sink = ListSink()
        result = await best_of(TWO_VERIFIED, repo, sink, transcript, n=2, concurrency=1).run(TASK)
        assert result.verified
        assert [(a.number, a.verified, a.rank, a.won, a.applied) for a in result.attempts] == [
            (1, True, 2, False, False),
            (2, True, 1, True, True),
        ]
        assert (repo / "calc.py").read_text() == SMALL
        assert not (repo / "helpers.py").exists()
        small, large = result.attempts[1].score, result.attempts[0].score
        assert small is not None
        assert large is not None
        assert (small.lines, small.files, small.outside, small.guarded) == (2, 1, (), ())
        assert (large.files, large.outside) == (2, ("helpers.py",))
        assert large.lines > small.lines
        assert "(rank 1: 2 lines in 1 files, no tests touched, $0.0020) [applied]" in (
            result.attempts[1].describe()
        )
        ranked = [e for e in sink.events if isinstance(e, AttemptsRanked)]
        assert [(e.ranking, [s.attempt for s in e.scores]) for e in ranked] == [
            ("smallest_change", [2, 1])
        ]
        won = next(e for e in sink.events if isinstance(e, AttemptWon))
        assert (won.attempt, won.pick) == (2, "best_verified")
        read = [e for _, e in TranscriptReader(transcript) if isinstance(e, AttemptsRanked)]
        assert read == ranked
        text = transcript.read_text().replace(str(repo), "<repo>").replace(result.run_id, "<r>")
        keys.append([Event.from_dict(json.loads(line)).replay_key() for line in text.splitlines()])
    assert keys[0] == keys[1]


async def test_max_verified_stops_the_run_once_enough_attempts_are_verified(
    tmp_path: Path,
) -> None:
    """With ``max_verified=2``, attempts 1 and 2 are verified and attempt 3 never starts;
    the ranking chooses between the two."""
    repo = calc_repo(tmp_path / "repo")
    rows = [*TWO_VERIFIED, write(3, "calc.py", SMALL), claim(3)]
    harness = best_of(rows, repo, n=3, concurrency=1, max_verified=2)
    result = await harness.run(TASK)
    assert [(a.number, a.rank, a.applied) for a in result.attempts] == [
        (1, 2, False),
        (2, 1, True),
        (3, None, False),
    ]
    assert result.attempts[2].halt_reason == Cancelled(
        "best_of, before it started: 2 attempts were verified (max_verified)"
    )


@frozen
class Biggest:
    """A custom ranking: the largest change first."""

    name: str = "biggest"

    def rank(self, scores: Sequence[AttemptScore]) -> Sequence[AttemptScore]:
        return sorted(scores, key=lambda s: -s.lines)


@frozen
class Forgetful:
    """A ranking that drops a score: refused."""

    name: str = "forgetful"

    def rank(self, scores: Sequence[AttemptScore]) -> Sequence[AttemptScore]:
        return scores[:1]


async def test_a_custom_ranking_decides_and_names_itself(tmp_path: Path) -> None:
    """`Ranking` is a small protocol: a ranking that prefers the biggest change picks
    attempt 1, and ``attempt.ranked`` names it."""
    assert isinstance(Biggest(), Ranking)
    repo = calc_repo(tmp_path / "repo")
    sink = ListSink()
    result = await best_of(TWO_VERIFIED, repo, sink, n=2, concurrency=1, ranking=Biggest()).run(
        TASK
    )
    assert [a.number for a in result.attempts if a.applied] == [1]
    assert (repo / "helpers.py").exists()
    assert [e.ranking for e in sink.events if isinstance(e, AttemptsRanked)] == ["biggest"]


async def test_a_ranking_that_drops_a_score_is_an_error_naming_it(tmp_path: Path) -> None:
    """A ranking must return every score once: one that drops one is a ConfigurationError
    naming it, and nothing is applied."""
    repo = calc_repo(tmp_path / "repo")
    harness = best_of(TWO_VERIFIED, repo, n=2, concurrency=1, ranking=Forgetful())
    with pytest.raises(ConfigurationError, match="ranking 'forgetful' must return every score"):
        await harness.run(TASK)
    assert (repo / "calc.py").read_text() == BUGGY


def test_a_test_or_protected_file_ranks_last() -> None:
    """The default ranking puts an attempt that changed a test file after one that did
    not, however small; then files outside the task, lines, and cost."""
    clean = AttemptScore(1, lines=40, files=1)
    tests = AttemptScore(2, lines=2, files=1, guarded=("tests/test_calc.py",))
    outside = AttemptScore(3, lines=2, files=2, outside=("x.py",))
    cheap = AttemptScore(4, lines=40, files=1, cost_usd=0.001)
    dear = AttemptScore(5, lines=40, files=1, cost_usd=0.5)
    order = SmallestChange().rank([tests, outside, dear, clean, cheap])
    assert [s.attempt for s in order] == [1, 4, 5, 3, 2]


def test_what_counts_as_a_test_and_as_named_by_the_task() -> None:
    """Test files by folder or name; a task names a file by its path or its name."""
    for path in ("tests/x.py", "test_calc.py", "pkg/calc_test.go", "web/a.test.ts", "conftest.py"):
        assert is_test_path(path), path
    for path in ("calc.py", "latest.py", "contest.py", "src/app.py"):
        assert not is_test_path(path), path
    assert named_in("Fix add in calc.py.", "calc.py")
    assert named_in("Fix add in src/calc.py.", "src/calc.py")
    assert named_in("Fix calc.py", "src/calc.py")
    assert not named_in("Fix add in mycalc.py.", "calc.py")
    assert not named_in("Fix add in calc.py.", "helpers.py")


def test_bad_best_verified_settings_name_the_field() -> None:
    """``max_verified`` must be positive and goes with ``best_verified``; a ranking must be
    a `Ranking`."""
    with pytest.raises(ConfigurationError, match="'max_verified'"):
        BestOf(pick="best_verified", max_verified=0)
    with pytest.raises(ConfigurationError, match="'max_verified' is for pick = 'best_verified'"):
        BestOf(max_verified=2)
    with pytest.raises(ConfigurationError, match="'ranking'"):
        BestOf(pick="best_verified", ranking="smallest")  # type: ignore[arg-type]


def test_a_spec_builds_best_verified_and_its_budget_of_verified_attempts() -> None:
    """``pick = "best_verified"`` and ``max_verified`` in a spec's ``[strategy]`` table."""
    from strategies._strategy_config import strategy_from_config

    def no_model(table: Any, where: str) -> Any:
        raise AssertionError("no evaluator here")

    table = {"type": "best_of", "n": 3, "pick": "best_verified", "max_verified": 2}
    built = strategy_from_config(table, where="strategy", build_model=no_model)
    assert isinstance(built, BestOf)
    assert (built.pick, built.max_verified, built.ranking) == ("best_verified", 2, SmallestChange())
