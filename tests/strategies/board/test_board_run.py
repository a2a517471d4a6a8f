"""Running a board: who takes what, the statuses an attempt leads to, the event log, and
resuming after the board stopped mid-run (in-process; `test_board_crash.py` kills a process)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from _board_support import DEMO, make_board, start_run, task_toml, writes
from structlog.testing import capture_logs

from strategies.board import (
    Board,
    BoardBusy,
    BoardConfigError,
    BoardEvent,
    BoardResult,
    BoardStore,
    holder,
    open_store,
)
from strategies.board._lock import BoardLock

pytestmark = pytest.mark.anyio


async def _run(board: Board) -> tuple[BoardResult, list[BoardEvent]]:
    seen: list[BoardEvent] = []
    async with board.stream() as events:
        async for event in events:
            seen.append(event)
    return events.result, seen


def _store(state: Path) -> BoardStore:
    return open_store(state)


def _kinds(events: list[BoardEvent], task: str) -> list[str]:
    return [e.kind for e in events if e.task == task]


async def test_the_demo_board_completes_four_tasks_and_sends_one_to_review(
    tmp_path: Path,
) -> None:
    """Two roles, five tasks: the early claim of `api` is sent back and then completes; the
    release check never passes, so `release` waits for a person; the rest complete."""
    board = Board.from_folder(DEMO, agents=2, state=tmp_path / "state")
    result, events = await _run(board)
    assert result.counts == {
        "pending": 0,
        "blocked": 0,
        "in_progress": 0,
        "complete": 4,
        "review": 1,
        "failed": 0,
    }
    assert not result.complete
    assert result.status_of("release") == "review"
    assert _kinds(events, "api") == [
        "task.unblocked",
        "task.assigned",
        "task.rejected",
        "task.complete",
    ]
    assert _kinds(events, "release")[-1] == "task.review"
    assert "task.complete" not in _kinds(events, "release")
    roles = {t.id: t.role for t in board.tasks}
    for event in events:
        if event.kind == "task.assigned":
            assert event.agent is not None
            assert event.agent.startswith(roles[event.task or ""])
    with _store(tmp_path / "state") as store:
        assert store.events() == events  # everything streamed is in the log, in order
    workspace = tmp_path / "state" / "workspace"
    assert (workspace / "API.md").is_file()
    assert not (DEMO / "workspace" / "API.md").exists()  # the template is never touched


async def test_an_idle_agent_takes_the_highest_priority_unblocked_task(tmp_path: Path) -> None:
    """One agent: b (priority 9), then a (1), then c (5, but waiting for a); ties go by id."""
    make_board(
        tmp_path,
        {
            "a": task_toml("a", priority=1),
            "b": task_toml("b", priority=9),
            "c": task_toml("c", priority=5, depends_on=["a"]),
            "d": task_toml("d", priority=1),
        },
        {name: writes(f"{name}.txt") for name in "abcd"},
    )
    result, events = await _run(Board.from_folder(tmp_path))
    assert result.complete
    order = [e.task for e in events if e.kind == "task.assigned"]
    assert order == ["b", "a", "c", "d"]


async def test_a_claim_the_check_refuses_never_completes(tmp_path: Path) -> None:
    """The agent says it is done without the file: rejected, and when the budget runs out
    (the check is skipped then) the task goes to review, not complete."""
    make_board(
        tmp_path,
        {"t": task_toml("t", extra="[budget]\nmax_turns = 2")},
        {"t": [{"text": "done"}, {"text": "really done"}]},
    )
    result, events = await _run(Board.from_folder(tmp_path))
    assert result.status_of("t") == "review"
    assert _kinds(events, "t") == ["task.assigned", "task.rejected", "task.review"]
    (task,) = result.tasks
    assert task.reason is not None
    assert "max_turns" in task.reason


async def test_a_missing_verify_command_fails_without_running_the_agent(tmp_path: Path) -> None:
    """A check whose program is not installed cannot ever pass: failed, and no model call."""
    check = '[[checks]]\ntype = "command"\ncommand = ["no-such-program-4242", "--verify"]'
    make_board(tmp_path, {"t": task_toml("t", check=check)}, {"t": writes("t.txt")})
    result, events = await _run(Board.from_folder(tmp_path))
    assert result.status_of("t") == "failed"
    failed = next(e for e in events if e.kind == "task.failed")
    assert "`no-such-program-4242` is not installed" in failed.message
    transcript = tmp_path / ".board" / "transcripts" / "t.1.jsonl"
    assert transcript.read_text() == ""


async def test_a_model_auth_error_fails_the_task(tmp_path: Path) -> None:
    """An auth error is a hard failure: failed at once, not retried."""
    error = {"error": {"message": "invalid api key", "kind": "auth"}}
    make_board(tmp_path, {"t": task_toml("t")}, {"t": [error]})
    result, events = await _run(Board.from_folder(tmp_path))
    assert result.status_of("t") == "failed"
    assert _kinds(events, "t") == ["task.assigned", "task.failed"]
    assert "invalid api key" in events[-2].message


async def test_a_transient_model_failure_is_retried_up_to_max_attempts(tmp_path: Path) -> None:
    """A rate limit the client could not get past: retried; after max_attempts, failed."""
    limited = [{"error": {"message": "slow down", "kind": "rate_limit", "retryable": True}}]
    make_board(
        tmp_path,
        {"ok": task_toml("ok"), "never": task_toml("never")},
        {
            "ok.1": limited,
            "ok.2": writes("ok.txt"),
            "never.1": limited,
            "never.2": limited,
        },
        per_attempt=True,
        settings="max_attempts = 2",
    )
    result, events = await _run(Board.from_folder(tmp_path))
    assert result.status_of("ok") == "complete"
    assert result.status_of("never") == "failed"
    assert _kinds(events, "ok") == [
        "task.assigned",
        "task.retried",
        "task.assigned",
        "task.complete",
    ]
    gave_up = next(e for e in events if e.kind == "task.failed")
    assert gave_up.message.startswith("gave up after 2 attempt(s)")


async def test_a_broken_fixture_fails_the_task(tmp_path: Path) -> None:
    """A script that runs out before the run ends is the agent's fault: failed, with the file."""
    make_board(tmp_path, {"t": task_toml("t")}, {"t": [{"text": "done"}]})
    result, events = await _run(Board.from_folder(tmp_path))
    assert result.status_of("t") == "failed"
    assert "t.jsonl" in events[-2].message


async def test_a_role_without_an_agent_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """Tasks of role x and only agents of role w: an error, and no attempt was made."""
    make_board(tmp_path, {"t": task_toml("t", role="x")}, {"t": writes("t.txt")})
    with pytest.raises(BoardConfigError, match="no agent has the role 'x', which tasks t need"):
        await Board.from_folder(tmp_path).run()
    with _store(tmp_path / ".board") as store:
        assert store.tasks() == []
        assert store.attempts() == []


async def test_a_second_board_on_the_same_state_folder_is_refused(tmp_path: Path) -> None:
    """While one board holds the state folder, another does not start."""
    make_board(tmp_path, {"t": task_toml("t")}, {"t": writes("t.txt")})
    lock = BoardLock(tmp_path / ".board")
    lock.acquire("someone-else")
    try:
        with pytest.raises(BoardBusy, match="a board is already running"):
            await Board.from_folder(tmp_path).run()
    finally:
        lock.release()
    result, _ = await _run(Board.from_folder(tmp_path))
    assert result.complete


RESUMABLE = {
    "slow": task_toml(
        "slow",
        extra='[strategy]\ntype = "ralph"\nmax_iterations = 3\n[budget]\nmax_turns = 9',
        check='[[checks]]\ntype = "files"\npaths = ["one.txt", "two.txt"]',
    ),
    "after": task_toml("after", depends_on=["slow"]),
}
RESUMABLE_SCRIPTS: dict[str, list[Any]] = {
    # Iteration 1 writes half and claims done; iteration 2 hangs until the board is stopped.
    "slow.1": [
        *writes("one.txt"),
        {"text": "thinking...", "delay": 600},
    ],
    # The resumed attempt: two iterations left, the check's reason first.
    "slow.2": [
        {
            "expect": {
                "last_feedback_source": "initial_check",
                "last_message_contains": "two.txt",
            },
            **writes("two.txt")[0],
        },
        writes("two.txt")[1],
    ],
    "after.1": writes("after.txt"),
}


async def test_a_stopped_board_resumes_the_task_it_was_running(tmp_path: Path) -> None:
    """Stopped in Ralph's second iteration: the next run closes the attempt as interrupted
    and resumes the task after its one completed iteration, with the budget it had left."""
    make_board(tmp_path, RESUMABLE, RESUMABLE_SCRIPTS, per_attempt=True)
    async with Board.from_folder(tmp_path).stream() as events:
        async for event in events:
            if event.kind == "task.rejected":
                break  # leaving the block stops the board in the middle of the attempt
    with _store(tmp_path / ".board") as store:
        (slow,) = [t for t in store.tasks() if t.id == "slow"]
        assert slow.status == "in_progress"
        (open_attempt,) = store.attempts("slow")
        assert open_attempt.ended_at is None

    result, seen = await _run(Board.from_folder(tmp_path))
    assert result.complete
    assert _kinds(seen, "slow") == ["task.retried", "task.assigned", "task.complete"]
    assert "resumes after 1 completed iteration(s)" in seen[0].message
    assert seen[1].kind == "board.started"
    with _store(tmp_path / ".board") as store:
        first, second = store.attempts("slow")
        assert first.outcome == "interrupted"
        assert first.ended_at is not None
        assert first.ended_at <= second.started_at
        assert second.outcome == "complete"
        assert second.resume.iterations == 1
        assert second.resume.turns == 2
        assert first.transcript.read_text().count("check.failed") == 1  # kept, not rewritten
        kinds = [e.kind for e in store.events()]
    assert kinds.count("board.started") == 2
    assert kinds.count("board.finished") == 1


async def test_an_outcome_the_board_did_not_record_is_taken_from_the_transcript(
    tmp_path: Path,
) -> None:
    """The run had ended (run.halted is in its transcript) when the board died: the next
    board records that outcome and does not run the task again."""
    make_board(tmp_path, {"t": task_toml("t")}, {})
    board = Board.from_folder(tmp_path)
    state = tmp_path / ".board"
    with BoardStore(state / "board.db") as store:
        start_run(store, board.tasks, owner="dead")
        claim = store.claim("dead", "w-1", "w", "local")
        assert claim is not None
        assert not isinstance(claim, str)
        claim.transcript.parent.mkdir(parents=True)
        halted = {"type": "Completed", "early": False}
        turn = {"agent": "w-1", "iteration": 1, "turn": 1}
        finished = {"event": "turn.finished", "at": 0.1, **turn, "response": {"usage": {}}}
        usage = {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
        done = {"verified": True, "turns": 1, "tool_calls": 0, "usage": usage}
        claim.transcript.write_text(
            json.dumps(finished)
            + "\n"
            + json.dumps({"event": "run.halted", "at": 0.2, "reason": halted, **done})
            + "\n"
        )
    result, events = await _run(board)
    assert result.status_of("t") == "complete"
    assert [e.kind for e in events] == ["task.complete", "board.started", "board.finished"]
    assert events[0].message.startswith("(recovered from the transcript)")


async def _reviewed_then_fixable(folder: Path) -> None:
    """A board whose task `t` ends in review (its first agent only claims done) and whose
    second attempt, told by the check what is missing, finishes it."""
    make_board(
        folder,
        {"t": task_toml("t", extra="[budget]\nmax_turns = 3")},
        {
            "t.1": [{"text": "done"}, {"text": "done!"}, {"text": "done!!"}],
            "t.2": [
                {"expect": {"last_feedback_source": "initial_check"}, **writes("t.txt")[0]},
                writes("t.txt")[1],
            ],
        },
        per_attempt=True,
    )
    result, _ = await _run(Board.from_folder(folder))
    assert result.status_of("t") == "review"


async def test_retry_by_hand_runs_a_reviewed_task_again_with_a_fresh_budget(
    tmp_path: Path,
) -> None:
    """review -> retry -> pending; the next run's attempt checks the work first (a person
    may have fixed it) and goes on from there."""
    await _reviewed_then_fixable(tmp_path)
    with _store(tmp_path / ".board") as store:
        assert store.retry(["t"]) == ["pending"]
        with pytest.raises(BoardConfigError, match="is pending; only a task in review"):
            store.retry(["t"])
        with pytest.raises(BoardConfigError, match="no task 'nope'"):
            store.retry(["nope"])
        assert store.events()[-1].message.startswith("by hand (it was review:")
    result, _ = await _run(Board.from_folder(tmp_path))
    assert result.status_of("t") == "complete"
    assert result.tasks[0].attempts == 2


async def test_board_events_go_to_structlog(tmp_path: Path) -> None:
    """Each event is a log line named by its kind; review and failed are warnings."""
    make_board(
        tmp_path,
        {"t": task_toml("t", extra="[budget]\nmax_turns = 1")},
        {"t": [{"text": "done"}]},
    )
    with capture_logs() as logs:
        await Board.from_folder(tmp_path).run()
    board_lines = [line for line in logs if line["event"].startswith(("task.", "board."))]
    assert [line["event"] for line in board_lines] == [
        "board.started",
        "task.assigned",
        "task.review",
        "board.finished",
    ]
    assert board_lines[2]["log_level"] == "warning"
    assert board_lines[2]["task"] == "t"
    assert board_lines[1]["log_level"] == "info"


async def test_a_task_retried_while_the_board_runs_is_picked_up(tmp_path: Path) -> None:
    """`retry` from another process while the board works on something else (a task added
    since the last run): an idle agent notices within `poll` seconds and takes the task."""
    await _reviewed_then_fixable(tmp_path)
    make_board(
        tmp_path,
        {"busy": task_toml("busy")},
        {"busy.1": [{**writes("busy.txt")[0], "delay": 1.0}, writes("busy.txt")[1]]},
        per_attempt=True,
    )
    retried = False
    async with Board.from_folder(tmp_path, agents=2).stream() as events:
        async for event in events:
            if event.kind == "task.assigned" and event.task == "busy" and not retried:
                with _store(tmp_path / ".board") as store:  # as `harness board retry` does
                    store.retry(["t"])
                retried = True
    assert events.result.complete
    with _store(tmp_path / ".board") as store:
        assert [a.outcome for a in store.attempts("t")] == ["review", "complete"]


async def test_a_sink_that_fails_is_detached_and_the_board_goes_on(tmp_path: Path) -> None:
    """A caller's sink that raises is logged once and dropped; the board still finishes."""

    class Broken:
        calls = 0

        def emit(self, event: BoardEvent) -> None:
            Broken.calls += 1
            raise RuntimeError("sink is broken")

    make_board(tmp_path, {"t": task_toml("t")}, {"t": writes("t.txt")})
    with capture_logs() as logs:
        result = await Board.from_folder(tmp_path, sinks=[Broken()]).run()
    assert result.complete
    assert Broken.calls == 1
    assert [line["event"] for line in logs].count("board.sink.failed") == 1


async def test_status_knows_whether_a_board_is_running(tmp_path: Path) -> None:
    """While a board runs, its lock file names this process; after, nobody."""
    make_board(
        tmp_path,
        {"t": task_toml("t")},
        {"t": [{**writes("t.txt")[0], "delay": 0.2}, writes("t.txt")[1]]},
    )
    assert holder(tmp_path / ".board") is None
    seen = None
    async with Board.from_folder(tmp_path).stream() as events:
        async for event in events:
            if event.kind == "task.assigned":
                seen = holder(tmp_path / ".board")
    assert seen is not None
    assert seen["pid"] == os.getpid()
    assert holder(tmp_path / ".board") is None


async def test_a_self_verifying_task_whose_evaluator_fails_it_once(tmp_path: Path) -> None:
    """The evaluator's FAIL is recorded as a claim sent back; its PASS completes the task."""
    strategy = (
        '[strategy]\ntype = "self_verifying"\nmax_rounds = 2\nevaluator_must_use_tools = false\n'
        'evaluator = { type = "fixture", path = "../scripts/evaluator.jsonl" }'
    )
    make_board(
        tmp_path,
        {"t": task_toml("t", extra=strategy)},
        {
            "t": [*writes("t.txt", "draft"), *writes("t.txt", "final")],
            "evaluator": [
                {"agent": "evaluator", "text": "t.txt is a draft.\nVERDICT: FAIL"},
                {"agent": "evaluator", "text": "Good.\nVERDICT: PASS"},
            ],
        },
    )
    result, events = await _run(Board.from_folder(tmp_path))
    assert result.complete
    assert _kinds(events, "t") == ["task.assigned", "task.rejected", "task.complete"]
    rejected = next(e for e in events if e.kind == "task.rejected")
    assert rejected.message == "the evaluator failed the work: t.txt is a draft."


async def test_a_retried_attempt_whose_check_already_passes_is_complete(tmp_path: Path) -> None:
    """A person fixes a reviewed task's work and retries it: the next attempt checks first,
    finds the work done and completes before its first turn, although its scripted agent
    (one script for every attempt) has lines it never reached; not failed."""
    make_board(
        tmp_path,
        {"t": task_toml("t", extra="[budget]\nmax_turns = 2")},
        {"t": [{"text": "done"}, {"text": "done!"}]},
    )
    result, _ = await _run(Board.from_folder(tmp_path))
    assert result.status_of("t") == "review"
    (tmp_path / ".board" / "workspace" / "t.txt").write_text("fixed by hand\n")
    with _store(tmp_path / ".board") as store:
        assert store.retry(["t"]) == ["pending"]
    result, events = await _run(Board.from_folder(tmp_path))
    assert result.status_of("t") == "complete", [e.message for e in events]
    with _store(tmp_path / ".board") as store:
        second = store.attempts("t")[-1]
        assert second.outcome == "complete"
        halted = json.loads(second.transcript.read_text().splitlines()[-1])
    assert halted["reason"] == {"type": "Completed", "early": True}
