"""`harness board run | status | retry`: exit codes, the table, JSON, and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _board_support import DEMO, make_board, start_run, task_toml, writes

from strategies._cli import main


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_demo_board_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    """Progress on stderr, the table on stdout, exit 1 because one task waits for review."""
    state = tmp_path / "state"
    code = main(
        ["board", "run", str(DEMO), "--agents", "2", "--state", str(state), "--backend", backend]
    )
    out, err = capsys.readouterr()
    assert code == 1
    assert "task.rejected   api        the check sent the claim back" in err
    assert "task.review     release" in err
    lines = out.splitlines()
    assert lines[0] == f"board {DEMO} ({state}): not running"
    assert lines[1].split() == ["TASK", "STATUS", "ROLE", "PRI", "TRIES", "COST", "TITLE"]
    assert lines[2].split()[:5] == ["release", "review", "backend", "0", "1"]
    assert "└ the completion check rejected 2 claims of done" in out
    assert lines[-2:] == ["(4 complete not listed: --all lists every task)", "4 complete, 1 review"]


def test_status_as_json_and_with_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`status --json` has the counts, every task and the latest events."""
    state = tmp_path / "state"
    main(["board", "run", str(DEMO), "--agents", "2", "--state", str(state), "-q"])
    capsys.readouterr()
    assert (
        main(["board", "status", str(DEMO), "--state", str(state), "--json", "--events", "2"]) == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["running"] is None
    assert data["counts"]["complete"] == 4
    assert {t["id"]: t["status"] for t in data["tasks"]}["api"] == "complete"
    assert [e["kind"] for e in data["events"]] == ["task.review", "board.finished"]
    assert main(["board", "status", str(DEMO), "--state", str(state), "--events", "1"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("4 complete, 1 review")


def test_status_lists_every_task_with_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`status --all` lists the complete tasks too, by priority, and says nothing is hidden."""
    state = tmp_path / "state"
    main(["board", "run", str(DEMO), "--agents", "2", "--state", str(state), "-q"])
    capsys.readouterr()
    assert main(["board", "status", str(DEMO), "--state", str(state), "--all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # The last two lines: what the board spent, and the counts.
    listed = [line.split()[:2] for line in lines[2:] if not line.startswith(" ")][:-2]
    assert listed == [
        ["schema", "complete"],
        ["api", "complete"],
        ["changelog", "complete"],
        ["docs", "complete"],
        ["release", "review"],
    ]
    assert lines[-1] == "4 complete, 1 review"
    assert "not listed" not in "\n".join(lines)


def test_status_shows_the_first_tasks_of_each_status_and_counts_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each status that is not complete lists its first tasks (by priority, then id) and says
    how many more there are; blocked tasks say what they wait for; `--json` has every task."""
    from strategies._cli import _board_status
    from strategies.board import BoardStore, load_tasks

    monkeypatch.setattr(_board_status, "PER_STATUS", 2)
    tasks = {f"p{i}": task_toml(f"p{i}", priority=i) for i in range(5)}
    tasks |= {f"b{i}": task_toml(f"b{i}", depends_on=["p0"]) for i in range(3)}
    make_board(tmp_path, tasks, {})
    state = tmp_path / ".board"
    with BoardStore(state / "board.db") as store:
        start_run(store, load_tasks(tmp_path / "tasks"))
    assert main(["board", "status", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:3] for line in lines[1:]] == [
        ["TASK", "STATUS", "ROLE"],
        ["b0", "blocked", "w"],
        ["└", "waits", "for"],
        ["b1", "blocked", "w"],
        ["└", "waits", "for"],
        ["...", "and", "1"],
        ["p4", "pending", "w"],
        ["p3", "pending", "w"],
        ["...", "and", "3"],
        ["5", "pending,", "3"],
    ]
    assert lines[3].strip() == "└ waits for p0 (pending)"
    assert lines[6] == "... and 1 more blocked (--all lists them)"
    assert lines[9] == "... and 3 more pending (--all lists them)"
    assert main(["board", "status", str(tmp_path), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["tasks"]) == 8


def test_retry_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`retry ID` prints what the task became; a task not in review or failed is refused."""
    state = tmp_path / "state"
    main(["board", "run", str(DEMO), "--agents", "2", "--state", str(state), "-q"])
    capsys.readouterr()
    args = ["board", "retry", "release", "--board", str(DEMO), "--state", str(state)]
    assert main(args) == 0
    assert capsys.readouterr().out == "release: pending\n"
    assert main(args) == 2
    assert "'release' is pending; only a task in review or failed" in capsys.readouterr().err


def test_a_malformed_task_file_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing runs; the message names the file and the field."""
    make_board(tmp_path, {"t": task_toml("t").replace("priority = 0", 'priority = "high"')}, {})
    assert main(["board", "run", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'tasks' / 't.toml'}: priority must be an int (got 'high')" in err
    assert not (tmp_path / ".board").exists()


def test_status_before_any_run_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No database yet: a message that says so."""
    assert main(["board", "status", str(tmp_path)]) == 2
    assert "no board database" in capsys.readouterr().err


def test_every_task_complete_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 0 only when every task is verified complete."""
    make_board(tmp_path, {"t": task_toml("t")}, {"t": writes("t.txt")})
    assert main(["board", "run", str(tmp_path), "-q"]) == 0
    assert capsys.readouterr().err == ""
