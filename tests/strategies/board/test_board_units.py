"""The board's parts on their own: reading a transcript back, what an interrupted attempt
carries into the next, the verify-command pre-check, and the database's guarantees."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import attrs
import pytest
from _board_support import start_run, task_toml

from checks import AnyOf, CommandCheck, FilesCheck, TestSuiteCheck
from strategies._spec import default_cap
from strategies.board import (
    AttemptInfo,
    AttemptProgress,
    AttemptSpec,
    BoardStore,
    classify,
    execute_attempt,
    read_attempt,
)
from strategies.board._attempt import missing_command, remaining_budget
from strategies.board._tasks import load_task
from termination import Budget, TerminationPolicy


def _transcript(path: Path, events: list[dict[str, Any]], torn: str = "") -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + torn)
    return path


def _turn(at: float, cost: float | None = 0.01, turn: int = 1) -> dict[str, Any]:
    usage = {"input_tokens": 100, "output_tokens": 10, "cost_usd": cost}
    return {
        "event": "turn.finished",
        "at": at,
        "agent": "builder",
        "iteration": 1,
        "turn": turn,
        "response": {"text": "", "usage": usage},
    }


def _started(at: float, turn: int = 1) -> dict[str, Any]:
    return {"event": "turn.started", "at": at, "agent": "builder", "iteration": 1, "turn": turn}


def _check_failed(at: float, reason: str) -> dict[str, Any]:
    return {"event": "check.failed", "at": at, "agent": "builder", "turn": 0, "reason": reason}


def test_a_transcript_sums_up_to_what_the_attempt_got_done(tmp_path: Path) -> None:
    """Turns, tool calls, tokens, cost, time, and iterations whose closing check ran; a torn
    last line (killed mid-write) is ignored."""
    call = {"id": "c1", "name": "write_file", "arguments": {"path": "one.txt"}}
    events = [
        _check_failed(0.0, "before the first turn"),
        {"event": "iteration.started", "at": 0.1, "agent": "builder", "iteration": 1},
        _started(0.15),
        _turn(0.2),
        {"event": "tool.called", "at": 0.3, "agent": "builder", "turn": 1, "call": call}
        | {"content": "wrote one.txt", "is_error": False},
        _started(0.35, 2),
        _turn(0.4, turn=2),
        _check_failed(0.5, "two.txt is missing"),
        {"event": "iteration.started", "at": 0.6, "agent": "builder", "iteration": 2},
        _started(0.65),
        _turn(0.7),
    ]
    record = read_attempt(_transcript(tmp_path / "t.jsonl", events, torn='{"event": "tu'))
    assert record.halt is None
    assert record.progress.cost_usd == pytest.approx(0.03)
    assert attrs.evolve(record.progress, cost_usd=0.03) == AttemptProgress(
        iterations=1,
        turns=3,
        tool_calls=1,
        input_tokens=300,
        output_tokens=30,
        cost_usd=0.03,
        wall_time=0.7,
        last_reason="two.txt is missing",
    )
    assert read_attempt(tmp_path / "missing.jsonl").progress.empty


def test_an_unknown_cost_stays_unknown_and_a_halt_is_read(tmp_path: Path) -> None:
    """One turn of unknown price makes the total unknown; run.halted gives the outcome."""
    usage = {"input_tokens": 100, "output_tokens": 10, "cost_usd": None}
    halted = {
        "event": "run.halted",
        "at": 1.0,
        "reason": {"type": "Completed"},
        "verified": True,
        "turns": 1,
        "tool_calls": 0,
        "usage": usage,
    }
    record = read_attempt(_transcript(tmp_path / "t.jsonl", [_turn(0.1, None), halted]))
    assert record.progress.cost_usd is None
    assert (record.halt, record.verified) == ({"type": "Completed", "early": False}, True)


def test_progress_adds_up_across_interruptions() -> None:
    """Two interrupted attempts: their work adds, the newest reason wins."""
    a = AttemptProgress(iterations=1, turns=2, cost_usd=0.5, last_reason="a")
    b = AttemptProgress(iterations=1, turns=3, cost_usd=None, last_reason=None)
    total = a + b
    assert (total.iterations, total.turns, total.cost_usd, total.last_reason) == (2, 5, None, "a")
    assert AttemptProgress.from_dict(total.to_dict()) == total


def test_the_budget_left_after_an_interruption() -> None:
    """Each limit shrinks by what was used; a used-up one says so; none set, none changed."""
    budget = Budget(max_turns=10, max_total_tokens=1_000, max_wall_time=60.0)
    left = remaining_budget(budget, AttemptProgress(turns=4, input_tokens=300, wall_time=15.0))
    assert left == Budget(max_turns=6, max_total_tokens=700, max_wall_time=45.0)
    assert remaining_budget(budget, AttemptProgress(turns=10)) == (
        "budget exceeded before the interruption: max_turns used 10 of 10"
    )
    assert remaining_budget(Budget(), AttemptProgress(turns=99)) == Budget()


@pytest.mark.parametrize(
    ("halt", "verified", "outcome"),
    [
        ({"type": "Completed"}, True, "complete"),
        ({"type": "BudgetExceeded"}, False, "review"),
        ({"type": "RalphCompletionUnmet"}, False, "review"),
        ({"type": "RejectionLimit"}, False, "review"),
        ({"type": "ModelFailed", "kind": "auth"}, False, "failed"),
        ({"type": "ModelFailed", "kind": "bad_request"}, False, "failed"),
        ({"type": "ModelFailed", "kind": "rate_limit"}, False, "retry"),
        ({"type": "ModelFailed", "kind": "timeout"}, False, "retry"),
        ({"type": "Completed"}, False, "review"),  # only `verified` ever makes a task complete
    ],
)
def test_classify(halt: dict[str, Any], verified: bool, outcome: str) -> None:
    """The task's next status follows from the halt; complete only when verified."""
    assert classify(halt, verified) == outcome


@pytest.mark.parametrize(
    ("command", "missing"),
    [
        (["no-such-tool-777", "-x"], "no-such-tool-777"),
        ("no-such-tool-777 --flag", "no-such-tool-777"),
        ("FOO=1 no-such-tool-777", "no-such-tool-777"),
        ("cd sub && no-such-tool-777", None),  # a shell line starting with a builtin
        ("./run_tests.sh", None),  # a path: the agent may be about to write it
        (["sh", "-c", "exit 0"], None),
        ("$RUNNER test", None),
    ],
)
def test_a_verify_command_that_is_not_installed(
    command: str | list[str], missing: str | None
) -> None:
    """Only a bare program name is looked up on PATH."""
    policy = TerminationPolicy(completion_check=CommandCheck(command))
    found = missing_command(policy, None)
    if missing is None:
        assert found is None
    else:
        assert found is not None
        assert f"`{missing}` is not installed" in found


def test_the_pre_check_looks_inside_all_of_but_not_any_of() -> None:
    """A missing program in an AllOf branch fails the task; in an AnyOf, another may pass."""
    gone = TestSuiteCheck(["no-such-tool-777"])
    assert missing_command(TerminationPolicy(completion_check=FilesCheck(["a"]) & gone), None)
    either = AnyOf((gone, FilesCheck(["a"])))
    assert missing_command(TerminationPolicy(completion_check=either), None) is None


def _spec(folder: Path, fixture: str, carry: AttemptProgress | None = None) -> AttemptSpec:
    """An attempt at the task in `folder`/t.toml, its agent replaying `fixture`."""
    task = load_task(folder / "t.toml")
    return AttemptSpec(
        info=AttemptInfo("t", 2, "w-1", "w"),
        file=task.path,
        table=task.table,
        body=task.body,
        model={"type": "fixture", "path": fixture},
        model_base=folder,
        workspace=folder,
        carry=carry or AttemptProgress(),
    )


@pytest.mark.anyio
async def test_an_attempt_past_its_ralph_iterations_goes_to_review(tmp_path: Path) -> None:
    """Interrupted after its last iteration: review, with the last reason, no model call."""
    (tmp_path / "t.toml").write_text(
        task_toml("t", extra='[strategy]\ntype = "ralph"\nmax_iterations = 2')
    )
    carry = AttemptProgress(iterations=2, turns=4, last_reason="t.txt is missing")
    outcome = await execute_attempt(_spec(tmp_path, "nope.jsonl", carry), lambda event: None)
    assert outcome.outcome == "review"
    assert outcome.message.endswith("the check still failed: t.txt is missing")


@pytest.mark.anyio
async def test_an_attempt_whose_model_cannot_be_built_fails(tmp_path: Path) -> None:
    """A fixture that does not exist is a hard failure naming the file."""
    (tmp_path / "t.toml").write_text(task_toml("t"))
    outcome = await execute_attempt(_spec(tmp_path, "nope.jsonl"), lambda event: None)
    assert outcome.outcome == "failed"
    assert "nope.jsonl" in outcome.message


def test_the_database_is_in_wal_mode_and_admits_one_open_attempt_per_task(
    tmp_path: Path,
) -> None:
    """WAL lets `status` read while the board writes; the partial unique index refuses a
    second open attempt of a task, whatever the code above it does."""
    (tmp_path / "t.toml").write_text(task_toml("t"))
    task = load_task(tmp_path / "t.toml")
    with BoardStore(tmp_path / "board.db") as store:
        start_run(store, [task], max_attempts=1)
        assert store.claim("o", "w-1", "w", "local") is not None
    db = sqlite3.connect(tmp_path / "board.db")
    try:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
            db.execute(
                "INSERT INTO attempts (task_id, number, agent, owner, engine, started_at, "
                "heartbeat_at, resume, transcript) VALUES ('t', 2, 'w-2', 'o', 'local', 0, 0, "
                "'{}', 'x')"
            )
    finally:
        db.close()


def test_a_database_of_another_schema_is_refused(tmp_path: Path) -> None:
    """A board database from a version with another schema is not written to."""
    with BoardStore(tmp_path / "board.db"):
        pass
    db = sqlite3.connect(tmp_path / "board.db")
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    db.commit()
    db.close()
    with pytest.raises(ValueError, match="has schema 99, this version reads 2"):
        BoardStore(tmp_path / "board.db")


@pytest.mark.anyio
async def test_an_attempt_whose_task_sets_no_budget_runs_under_the_default_cap(
    tmp_path: Path,
) -> None:
    """A board attempt is an unattended run: with no [budget] it stops at the default cap
    (100 turns) and goes to review, where an agent that never claims done ran for ever."""
    (tmp_path / "t.toml").write_text(task_toml("t"))
    turns = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": f"n{i}.md", "content": "x"}}]}
        for i in range(default_cap().max_turns or 0)
    ]
    (tmp_path / "loop.jsonl").write_text("".join(json.dumps(line) + "\n" for line in turns))
    events: list[dict[str, Any]] = []
    outcome = await execute_attempt(_spec(tmp_path, "loop.jsonl"), events.append)
    assert outcome.outcome == "review"
    halted = [e for e in events if e["event"] == "run.halted"]
    assert halted[-1]["reason"]["type"] == "BudgetExceeded"
    assert halted[-1]["reason"]["limit"] == "max_turns"
    assert sum(e["event"] == "turn.finished" for e in events) == default_cap().max_turns
