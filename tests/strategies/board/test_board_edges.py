"""The board against what it reads but did not write carefully itself: a dead attempt's
transcript that is damaged or forged, and task files that are FIFOs, devices or too deep."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from _board_support import make_board, start_run, task_toml, writes

from strategies.board import Board, BoardConfigError, BoardStore, read_attempt
from strategies.board._tasks import MAX_TASK_BYTES, load_task

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 60


def _board(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "strategies", "board", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=TIMEOUT,  # a FIFO waited on would hang the command: this fails the test
        check=False,
    )


def _lines(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _turn(at: float, **usage: Any) -> dict[str, Any]:
    counts = {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, **usage}
    return {
        "event": "turn.finished",
        "at": at,
        "agent": "builder",
        "iteration": 1,
        "turn": 1,
        "response": {"text": "", "usage": counts},
    }


def _halted(reason: dict[str, Any], verified: object) -> dict[str, Any]:
    usage = {"input_tokens": 10, "output_tokens": 0, "cost_usd": 0.0}
    return {
        "event": "run.halted",
        "at": 9.0,
        "reason": reason,
        "verified": verified,
        "turns": 2,
        "tool_calls": 0,
        "usage": usage,
    }


HALTED = _halted({"type": "Completed", "early": False}, True)
STARTED = {"event": "iteration.started", "at": 0.0, "agent": "builder", "iteration": 1}
CALLED = {
    "event": "tool.called",
    "at": 0.2,
    "agent": "builder",
    "turn": 1,
    "call": {"id": "c1", "name": "t", "arguments": {}},
    "content": "ok",
    "is_error": False,
}
FAILED = {"event": "check.failed", "at": 0.3, "agent": "builder", "turn": 1, "check": "c"}


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({**STARTED, "iteration": "two"}, "iteration"),
        (_turn(0.3, input_tokens=-5), "input_tokens"),
        (_turn(0.3, input_tokens=True), "input_tokens"),
        (_turn(0.3, cost_usd=float("nan")), "cost_usd"),
        ({**_turn(0.3), "response": "hi"}, "response"),
        ({**CALLED, "at": float("inf")}, "at"),
        ({**FAILED, "reason": ["x"]}, "reason"),
        (_halted("done", False), "reason"),  # type: ignore[arg-type]
        (
            _halted({"type": "BudgetExceeded", "limit": "t", "used": 1, "limit_value": 1}, 1),
            "verified",
        ),
        (_halted({"type": "SensorTripped", "sensor": "s", "message": "m"}, True), "SensorTripped"),
        ("this is not json", ""),
        ("[" * 100_000 + "]" * 100_000, ""),
        ('["a list"]', ""),
    ],
)
def test_a_bad_line_stops_the_count_there_and_is_reported(
    tmp_path: Path, bad: Any, field: str
) -> None:
    """What came before the bad line counts, nothing after it (not the halt either), and the
    problem names the file, the line and the field; nothing raises."""
    rows = [STARTED, _turn(0.1, input_tokens=10), bad, _turn(0.5), HALTED]
    path = _lines(tmp_path / "t.jsonl", rows)
    record = read_attempt(path)
    assert record.problem is not None
    assert record.problem.startswith(f"{path}:3")
    assert field in record.problem
    assert record.problem.endswith("nothing from this line on counts")
    assert (record.progress.turns, record.progress.input_tokens) == (1, 10)
    assert record.halt is None


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_transcript_that_is_a_fifo_or_a_device_counts_nothing_and_never_hangs(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "t.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    record = _within(path, lambda: read_attempt(path))
    assert record.progress.empty
    assert record.problem == f"{path}: cannot read the transcript: it is not a regular file"


def _within(path: Path, read: Callable[[], T]) -> T:
    """`read()`, on a thread the test gives up on after a while: a regression hangs on the
    FIFO or fills memory from the device, and must fail the test, not stall the suite (the
    FIFO is then opened for writing, which lets the thread go)."""
    results: list[T] = []
    worker = threading.Thread(target=lambda: results.append(read()), daemon=True)
    worker.start()
    worker.join(TIMEOUT)
    if worker.is_alive():
        if path.is_fifo():
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"reading {path} did not end")
    return results[0]


def _board_with_a_dead_attempt(tmp_path: Path, rows: list[Any]) -> Board:
    """A board whose task `t` has an open attempt (its board died) with transcript `rows`."""
    make_board(tmp_path, {"t": task_toml("t")}, {"t": writes("t.txt")})
    board = Board.from_folder(tmp_path)
    with BoardStore(tmp_path / ".board" / "board.db") as store:
        start_run(store, board.tasks, owner="dead")
        claim = store.claim("dead", "w-1", "w", "local")
        assert claim is not None
        assert not isinstance(claim, str)
        claim.transcript.parent.mkdir(parents=True)
        _lines(claim.transcript, rows)
    return Board.from_folder(tmp_path)


@pytest.mark.anyio
async def test_a_damaged_transcript_is_reported_and_the_task_runs_again(tmp_path: Path) -> None:
    """A dead attempt's transcript with a bad field before a forged verified halt: the halt is
    not trusted, the damage is named in the task.retried event, the attempt counts as
    interrupted, and the next attempt (checking first) completes the task."""
    rows = [STARTED, _turn(0.1, input_tokens=10), _turn(0.2, output_tokens=-1), HALTED]
    board = _board_with_a_dead_attempt(tmp_path, rows)
    seen = []
    async with board.stream() as events:
        async for event in events:
            seen.append(event)
    assert events.result.status_of("t") == "complete"
    retried = [e for e in seen if e.kind == "task.retried"]
    assert len(retried) == 1
    assert "its transcript is damaged" in retried[0].message
    assert "'output_tokens' must be a whole number >= 0 (got -1)" in retried[0].message
    with BoardStore(tmp_path / ".board" / "board.db") as store:
        first, second = store.attempts("t")
    assert first.outcome == "interrupted"
    assert second.outcome == "complete"


def test_a_transcript_that_is_a_fifo_does_not_block_the_next_start(tmp_path: Path) -> None:
    """The real command: a dead attempt's transcript replaced by a FIFO is reported, and the
    task runs again and completes."""
    _board_with_a_dead_attempt(tmp_path, [])
    with BoardStore(tmp_path / ".board" / "board.db") as store:
        (attempt,) = store.attempts("t")
    attempt.transcript.unlink()
    os.mkfifo(attempt.transcript)
    done = _board("run", str(tmp_path))
    assert done.returncode == 0, done.stderr
    status = json.loads(_board("status", str(tmp_path), "--json", "--events", "9").stdout)
    (retried,) = [e for e in status["events"] if e["kind"] == "task.retried"]
    message = f"{attempt.transcript}: cannot read the transcript: it is not a regular file"
    assert message in retried["message"]


# -- task files


def test_a_task_file_that_is_a_fifo_or_a_device_is_refused_at_once(tmp_path: Path) -> None:
    """`harness board run` with a FIFO and a link to /dev/zero among the task files: both are
    named as not regular files, exit 2, never a hang or a memory blow-up."""
    make_board(tmp_path, {"t": task_toml("t")}, {"t": writes("t.txt")})
    os.mkfifo(tmp_path / "tasks" / "fifo.toml")
    (tmp_path / "tasks" / "zero.toml").symlink_to("/dev/zero")
    done = _board("run", str(tmp_path))
    assert done.returncode == 2, done.stderr
    assert f"{tmp_path / 'tasks' / 'fifo.toml'}: the task file is not a regular file" in done.stderr
    assert f"{tmp_path / 'tasks' / 'zero.toml'}: the task file is not a regular file" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_task_file_too_large_or_nested_too_deeply_is_an_error_naming_it(
    tmp_path: Path,
) -> None:
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (MAX_TASK_BYTES + 1))
    with pytest.raises(BoardConfigError, match=r"big\.toml: the task file is larger than"):
        load_task(big)
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(BoardConfigError, match=r"deep\.toml: arrays or tables nested too deeply"):
        load_task(deep)


# -- a state folder that cannot be used

TRACEBACK = "Traceback"


def _ran_board(tmp_path: Path) -> Path:
    """A board that has run once (task `t` complete, `r` in review); its state folder."""
    make_board(
        tmp_path,
        {"t": task_toml("t"), "r": task_toml("r", extra="[budget]\nmax_turns = 1")},
        {"t": writes("t.txt"), "r": [{"text": "done"}]},
    )
    done = _board("run", str(tmp_path), "-q")
    assert done.returncode == 1, done.stderr
    return tmp_path / ".board"


@pytest.mark.parametrize("damage", ["corrupt", "truncated"])
def test_a_damaged_database_is_a_clear_error_with_its_own_exit_code(
    tmp_path: Path, damage: str
) -> None:
    """`board run`, `status` and `retry` on a database overwritten or cut short: exit 3 (not
    1, which means tasks are not complete), the file named, what to do, no traceback."""
    state = _ran_board(tmp_path)
    database = state / "board.db"
    for extra in (state / "board.db-wal", state / "board.db-shm"):
        extra.unlink(missing_ok=True)
    if damage == "corrupt":
        database.write_bytes(os.urandom(4096))
    else:
        with database.open("r+b") as file:
            file.truncate(database.stat().st_size // 2)
    for args in (
        ["run", str(tmp_path)],
        ["status", str(tmp_path)],
        ["retry", "r", "--board", str(tmp_path)],
    ):
        done = _board(*args)
        assert done.returncode == 3, (args, done.stderr)
        assert done.stderr.startswith(f"harness board: {database}: the board's database is damaged")
        assert "move it aside" in done.stderr
        assert TRACEBACK not in done.stderr


@contextmanager
def _mounted(*argv: str, target: Path) -> Iterator[None]:
    """`mount argv... target` for the block (root only; the test skips where it may not)."""
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    done = subprocess.run(["mount", *argv, str(target)], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"mount is not allowed here: {done.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", str(target)], check=True)


def test_a_read_only_state_is_read_by_status_and_refused_by_run(tmp_path: Path) -> None:
    """The state folder on a read-only mount: `status` shows the table; `run` and `retry` say
    the state is read-only and what to do, exit 3."""
    state = _ran_board(tmp_path)
    with _mounted("--bind", str(state), target=state):
        remount = ["mount", "-o", "remount,ro,bind", str(state)]
        if subprocess.run(remount, capture_output=True, check=False).returncode != 0:
            pytest.skip("a read-only remount is not allowed here")
        status = _board("status", str(tmp_path))
        ran = _board("run", str(tmp_path), "-q")
        retried = _board("retry", "r", "--board", str(tmp_path))
    assert status.returncode == 0, status.stderr
    assert "1 complete, 1 review" in status.stdout
    for done in (ran, retried):
        assert done.returncode == 3, done.stderr
        assert "the board's state is read-only: make the state folder writable" in done.stderr
        assert TRACEBACK not in done.stderr


def test_a_full_disk_is_a_clear_error_with_its_own_exit_code(tmp_path: Path) -> None:
    """The state folder on a 64 KiB file system: the disk is full, exit 3, no traceback."""
    make_board(tmp_path, {"t": task_toml("t")}, {"t": writes("t.txt")})
    disk = tmp_path / "disk"
    disk.mkdir()
    with _mounted("-t", "tmpfs", "-o", "size=64k", "tmpfs", target=disk):
        (disk / "filler").write_bytes(b"\0" * (60 * 1024))
        done = _board("run", str(tmp_path), "-q", "--state", str(disk / "state"))
    assert done.returncode == 3, done.stderr
    assert "the disk is full: free some space and run again" in done.stderr
    assert TRACEBACK not in done.stderr


def test_a_disk_that_fills_while_attempts_run_is_exit_3_in_one_line(tmp_path: Path) -> None:
    """The state folder on a small file system with room for the database but not for all
    the attempts' records: wherever the disk fills (the database, a transcript, inside the
    board's task group), the board stops with exit 3 and one line, never an ExceptionGroup's
    traceback with exit 1; or, with room enough, completes."""
    tasks = {"t": task_toml("t"), "u": task_toml("u")}
    make_board(tmp_path, tasks, {"t": writes("t.txt"), "u": writes("u.txt")})
    codes = []
    for free in (160, 200, 256, 288):  # KiB left on a 512 KiB disk
        disk = tmp_path / f"disk{free}"
        disk.mkdir()
        with _mounted("-t", "tmpfs", "-o", "size=512k", "tmpfs", target=disk):
            (disk / "filler").write_bytes(b"\0" * ((512 - free) * 1024))
            done = _board("run", str(tmp_path), "-q", "--state", str(disk / "state"))
        assert TRACEBACK not in done.stderr, (free, done.stderr)
        assert done.returncode in (0, 3), (free, done.stderr)
        if done.returncode == 3:
            assert done.stderr.startswith("harness board: "), done.stderr
            assert "the disk is full" in done.stderr
        codes.append(done.returncode)
    assert 3 in codes


def test_a_resumed_attempt_with_nothing_left_to_spend_is_complete_when_the_check_passes(
    tmp_path: Path,
) -> None:
    """The board died after the attempt's last allowed turn, which finished the work: the next
    attempt has no budget left, but it checks first, finds the work done and completes the
    task (its agent's script, never reached, is no error); not sent to review."""
    make_board(
        tmp_path,
        {"t": task_toml("t", extra="[budget]\nmax_turns = 1")},
        {"t": [{"text": "never asked"}]},
    )
    board = Board.from_folder(tmp_path)
    (tmp_path / "workspace" / "t.txt").write_text("done\n")  # the dead attempt's work
    with BoardStore(tmp_path / ".board" / "board.db") as store:
        start_run(store, board.tasks, owner="dead")
        claim = store.claim("dead", "w-1", "w", "local")
        assert claim is not None
        assert not isinstance(claim, str)
        claim.transcript.parent.mkdir(parents=True)
        _lines(claim.transcript, [STARTED, _turn(0.1)])
    done = _board("run", str(tmp_path), "-q")
    assert done.returncode == 0, done.stderr
    with BoardStore(tmp_path / ".board" / "board.db") as store:
        first, second = store.attempts("t")
    assert (first.outcome, second.outcome) == ("interrupted", "complete")
