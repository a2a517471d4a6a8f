"""A shared quota on the board: agents declare an `account`; a usage limit pauses every attempt
on that account until the reset, while the other accounts keep working.

The agents replay JSONL fixtures in which the model meets a usage limit (an ``error`` line of
kind ``usage_limit``, what a command-line agent's limit message becomes); each task's spec sets
``[pause] jitter = 0`` so the waits are exactly the reported reset.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from _board_support import make_board, task_toml, writes

from strategies._cli import main
from strategies.board import Board, BoardConfigError, BoardEvent, BoardResult, load_config
from strategies.board import open_store as _open_store

pytestmark = pytest.mark.anyio

TWO_ACCOUNTS = """
[board]
workspace_template = "workspace"
heartbeat = 0.2
lease = 1.0
poll = 0.2

[[agents]]
role = "a"
account = "alpha"
model = {{ type = "fixture", path = "scripts/{script}.jsonl" }}

[[agents]]
role = "b"
account = "beta"
model = {{ type = "fixture", path = "scripts/{script}.jsonl" }}
"""
NO_JITTER = "[pause]\njitter = 0\n"


def limit(retry_in: float, delay: float = 0.05) -> dict[str, Any]:
    """The model call meets Claude Code's usage limit, resetting in `retry_in` seconds."""
    return {
        "delay": delay,
        "error": {
            "kind": "usage_limit",
            "source": "claude",
            "message": "Claude AI usage limit reached|1764165600",
            "retry_in": retry_in,
        },
    }


async def _run(board: Board) -> tuple[BoardResult, list[BoardEvent]]:
    seen: list[BoardEvent] = []
    async with board.stream() as events:
        async for event in events:
            seen.append(event)
    return events.result, seen


def _index(events: list[BoardEvent], kind: str, who: str) -> int:
    return next(i for i, e in enumerate(events) if e.kind == kind and who in (e.task, e.agent))


async def test_one_account_pauses_and_resumes_while_the_other_finishes(tmp_path: Path) -> None:
    """Alpha's attempt meets its limit and waits 1s inside its run; beta's task completes
    meanwhile; after the reset alpha's attempt carries on at the same turn and completes: one
    attempt each, nothing failed."""
    toml = TWO_ACCOUNTS.format(script="{task}")
    root = make_board(
        tmp_path,
        {
            "ta": task_toml("ta", role="a", extra=NO_JITTER),
            "tb": task_toml("tb", role="b", extra=NO_JITTER),
        },
        {
            "ta": [writes("ta.txt")[0], limit(1.0), writes("ta.txt")[1]],
            "tb": [{**writes("tb.txt")[0], "delay": 0.2}, writes("tb.txt")[1]],
        },
        board_toml=toml,
    )
    result, events = await _run(Board.from_folder(root, state=tmp_path / "state"))
    assert result.complete
    paused = _index(events, "account.paused", "alpha")
    assert (
        paused < _index(events, "task.complete", "tb") < _index(events, "account.resumed", "alpha")
    )
    assert _index(events, "account.resumed", "alpha") < _index(events, "task.complete", "ta")
    assert "alpha is at its usage limit until" in events[paused].message
    assert not [e for e in events if e.agent == "beta" and e.kind.startswith("account.")]
    with _open_store(tmp_path / "state") as store:
        attempts = {(a.task, a.number): a.outcome for a in store.attempts()}
        assert attempts == {("ta", 1): "complete", ("tb", 1): "complete"}
        assert store.paused_accounts() == []
    transcript = (tmp_path / "state" / "transcripts" / "ta.1.jsonl").read_text()
    names = [json.loads(line)["event"] for line in transcript.splitlines()]
    assert names.count("run.paused") == 1
    assert names.count("run.resumed") == 1


async def test_the_other_attempts_on_the_account_stop_and_resume_without_a_charge(
    tmp_path: Path,
) -> None:
    """Two seats on one account: when t1 meets the limit, t2's attempt (mid-call) is stopped
    and goes back to pending (``task.paused``) without charging a failure; no attempt starts
    on the account until the reset; then t2 resumes and both complete."""
    toml = TWO_ACCOUNTS.format(script="{task}.{attempt}")
    root = make_board(
        tmp_path,
        {
            "t1": task_toml("t1", role="a", priority=2, extra=NO_JITTER),
            "t2": task_toml("t2", role="a", priority=1, extra=NO_JITTER),
        },
        {
            "t1.1": [writes("t1.txt")[0], limit(1.0, delay=0.3), writes("t1.txt")[1]],
            "t2.1": [{**writes("t2.txt")[0], "delay": 30}],
            "t2.2": writes("t2.txt"),
        },
        board_toml=toml,
        per_attempt=True,
    )
    board = Board.from_folder(root, agents=3, state=tmp_path / "state")  # a-1, b-1, a-2
    result, events = await _run(board)
    assert result.complete
    paused = _index(events, "account.paused", "alpha")
    stopped = _index(events, "task.paused", "t2")
    resumed = _index(events, "account.resumed", "alpha")
    assert paused < stopped < resumed
    reassigned = [i for i, e in enumerate(events) if e.kind == "task.assigned" and e.task == "t2"]
    assert len(reassigned) == 2
    assert reassigned[1] > resumed  # nothing started on alpha while it was paused
    with _open_store(tmp_path / "state") as store:
        outcomes = {(a.task, a.number): a.outcome for a in store.attempts()}
        assert outcomes == {("t1", 1): "complete", ("t2", 1): "paused", ("t2", 2): "complete"}
        charged = {t.id: t.attempts for t in store.tasks()}
        assert charged == {"t1": 1, "t2": 1}  # the stopped attempt is not charged
        failures = store._db.execute("SELECT failures FROM tasks WHERE id = 't2'").fetchone()[0]
        assert failures == 0


async def test_a_pause_survives_a_board_restart(tmp_path: Path) -> None:
    """A pause recorded by a board that stopped holds for the next board: it starts nothing on
    the paused account before the reset, and the other account works meanwhile."""
    toml = TWO_ACCOUNTS.format(script="{task}")
    root = make_board(
        tmp_path,
        {"ta": task_toml("ta", role="a"), "tb": task_toml("tb", role="b")},
        {"ta": writes("ta.txt"), "tb": writes("tb.txt")},
        board_toml=toml,
    )
    state = tmp_path / "state"
    state.mkdir()
    from strategies.board import BoardStore

    with BoardStore(state / "board.db") as store:
        store.pause_account("earlier", "alpha", time.time() + 0.8, "claude: limit reached")
    started = time.time()
    result, events = await _run(Board.from_folder(root, state=state))
    assert result.complete
    resumed = _index(events, "account.resumed", "alpha")
    assert _index(events, "task.assigned", "tb") < resumed < _index(events, "task.assigned", "ta")
    assert time.time() - started >= 0.7


def test_status_shows_the_paused_accounts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness board status` says which accounts are paused and until when; --json too."""
    make_board(tmp_path, {"ta": task_toml("ta")}, {"ta": writes("ta.txt")})
    state = tmp_path / ".board"
    from strategies.board import BoardStore

    until = time.time() + 3725
    with BoardStore(state / "board.db") as store:
        store.pause_account("o", "alpha", until, "claude: 5-hour limit\x1b[2J reached")
        store.pause_account("o", "alpha", until - 100, "an earlier reset never shortens it")
    assert main(["board", "status", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(until))
    assert (
        f"account alpha: paused until {when} (in 1h 02m): claude: 5-hour limit?[2J reached" in out
    )
    assert "\x1b" not in out
    assert main(["board", "status", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(a["name"], a["paused_until"]) for a in data["accounts"]] == [("alpha", until)]


def test_an_agent_declares_its_account(tmp_path: Path) -> None:
    """`account` defaults to the agent's name; it must be a string."""
    make_board(tmp_path, {}, {}, board_toml=TWO_ACCOUNTS.format(script="{task}"))
    config = load_config(tmp_path)
    assert [a.account for a in config.agents] == ["alpha", "beta"]
    (tmp_path / "board.toml").write_text(
        '[[agents]]\nrole = "a"\nname = "coder"\nmodel = { type = "fixture", path = "x" }\n'
    )
    assert [a.account for a in load_config(tmp_path).agents] == ["coder"]
    (tmp_path / "board.toml").write_text(
        '[[agents]]\nrole = "a"\naccount = 3\nmodel = { type = "fixture", path = "x" }\n'
    )
    with pytest.raises(BoardConfigError, match=r"agents\[0\]: 'account' must be a string"):
        load_config(tmp_path)


async def test_a_quota_that_is_gone_pauses_the_account_instead_of_a_busy_loop(
    tmp_path: Path,
) -> None:
    """Issue 37 point 6: a terminal limit (a Team login's "org's monthly spend limit") names no
    reset, and the board paused the account for 0 s: it took the task again at once, about 45
    attempts a second. The account now pauses for `TERMINAL_PAUSE` while the other account
    works; the task waits, pending, charged nothing."""
    from strategies.board._board import TERMINAL_PAUSE

    gone = {
        "error": {
            "kind": "usage_limit",
            "source": "claude",
            "message": "You've hit your org's monthly spend limit",
            "terminal": True,
        }
    }
    toml = TWO_ACCOUNTS.format(script="{task}")
    root = make_board(
        tmp_path,
        {"ta": task_toml("ta", role="a"), "tb": task_toml("tb", role="b")},
        {"ta": [gone], "tb": writes("tb.txt")},
        board_toml=toml,
    )
    seen: list[BoardEvent] = []
    started = time.time()
    with anyio.move_on_after(2):
        async with Board.from_folder(root, state=tmp_path / "state").stream() as events:
            async for event in events:
                seen.append(event)
    kinds = [(e.kind, e.task) for e in seen]
    assert kinds.count(("task.assigned", "ta")) == 1
    assert ("task.complete", "tb") in kinds
    assert not [e for e in seen if e.kind == "account.resumed"]
    with _open_store(tmp_path / "state") as store:
        (paused,) = store.paused_accounts()
        assert paused.name == "alpha"
        assert paused.paused_until == pytest.approx(started + TERMINAL_PAUSE, abs=10)
        assert {t.id: t.attempts for t in store.tasks()}["ta"] == 0
