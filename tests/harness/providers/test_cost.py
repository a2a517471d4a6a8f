"""The cost of each verified task: a run reports the tokens, cost and time it spent and, when
verified, what getting there cost; a board reports both per attempt and per verified task
(status, --json and the viewer); an unknown cost stays unknown, never zero; and each iteration
of a run can be bounded by its cost (`Budget.max_iteration_cost_usd`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _board_support import make_board, task_toml, writes
from _dom import parse

from harness import (
    BudgetExceeded,
    Completed,
    ConfigurationError,
    Harness,
    ScriptedModelClient,
    SessionStateSnapshot,
    Spent,
    workspace_tools,
)
from harness.testing import FakeClock
from strategies import Ralph
from strategies._cli import main
from strategies.board import Spending, TaskCost, board_cost
from termination import Budget, TerminationPolicy


class FileCheck:
    """Complete when done.txt exists."""

    async def check(self, state: SessionStateSnapshot) -> str | None:
        assert state.workspace is not None
        return None if (state.workspace / "done.txt").exists() else "done.txt is missing"

    def description(self) -> str:
        return "done.txt exists."


def priced(line: dict[str, Any], cost: float | None, tokens: int = 100) -> dict[str, Any]:
    usage: dict[str, Any] = {"input_tokens": tokens, "output_tokens": 10}
    if cost is not None:
        usage["cost_usd"] = cost
    return {**line, "usage": usage}


CLAIM = {"text": "done"}
WRITE = {"tool_calls": [{"name": "write_file", "arguments": {"path": "done.txt", "content": "x"}}]}


def harness(lines: list[dict[str, Any]], workspace: Path, **kw: Any) -> Harness:
    policy_kw = {k: kw.pop(k) for k in ("budget",) if k in kw}
    return Harness(
        model=ScriptedModelClient.from_responses(lines),
        policy=TerminationPolicy(completion_check=FileCheck(), **policy_kw),
        tools=workspace_tools(),
        workspace=workspace,
        clock=FakeClock(),
        **kw,
    )


@pytest.mark.anyio
async def test_a_verified_run_reports_what_getting_there_cost(tmp_path: Path) -> None:
    """The rejected claim's turn counts: the cost of the verified result is everything spent."""
    lines = [priced(CLAIM, 0.01), priced(WRITE, 0.02), priced(CLAIM, 0.03)]
    result = await harness(lines, tmp_path).run("write done.txt")
    assert result.halt_reason == Completed()
    assert result.spent == Spent(300, 30, result.usage.cost_usd, result.elapsed)
    assert result.spent.cost_usd == pytest.approx(0.06)
    assert result.verified_cost == result.spent
    assert result.spent.describe() == f"$0.0600, 330 tokens, {result.elapsed:.2f}s"


@pytest.mark.anyio
async def test_an_unverified_run_has_no_verified_cost_and_unknown_stays_unknown(
    tmp_path: Path,
) -> None:
    """Not verified: `verified_cost` is None. A call without a price makes the cost unknown
    (None), never $0, in `spent` and in `verified_cost` alike."""
    result = await harness([priced(CLAIM, 0.01)] * 2, tmp_path, budget=Budget(max_turns=2)).run("x")
    assert not result.verified
    assert result.verified_cost is None
    assert result.spent.cost_usd == pytest.approx(0.02)

    unknown = [priced(WRITE, 0.01), priced(CLAIM, None)]
    result = await harness(unknown, tmp_path / "ws2" if _mk(tmp_path / "ws2") else tmp_path).run(
        "x"
    )
    assert result.verified
    assert result.spent.cost_usd is None
    assert result.verified_cost is not None
    assert result.verified_cost.cost_usd is None
    assert result.spent.describe().startswith("cost unknown, 220 tokens")


def _mk(path: Path) -> bool:
    path.mkdir()
    return True


@pytest.mark.anyio
async def test_an_iteration_is_bounded_by_its_cost(tmp_path: Path) -> None:
    """`max_iteration_cost_usd`: under Ralph, the iteration that reaches it ends (scope
    "session") and a fresh one finishes the work within the run's budget; under the loop
    strategy the run halts, naming the dimension."""
    notes = {"tool_calls": [{"name": "write_file", "arguments": {"path": "n", "content": "."}}]}
    lines = [priced(notes, 0.3), priced(notes, 0.3), priced(WRITE, 0.1), priced(CLAIM, 0.1)]
    budget = Budget(max_iteration_cost_usd=0.5, max_cost_usd=5)
    result = await harness(lines, tmp_path, budget=budget, strategy=Ralph(max_iterations=3)).run(
        "x"
    )
    assert result.halt_reason == Completed()
    assert result.iterations == 2  # without the bound, the first iteration would finish
    assert result.spent.cost_usd == pytest.approx(0.8)

    loop = tmp_path / "loop"
    loop.mkdir()
    result = await harness(lines[:2], loop, budget=Budget(max_iteration_cost_usd=0.5)).run("x")
    halt = result.halt_reason
    assert isinstance(halt, BudgetExceeded)
    assert (halt.limit, halt.limit_value, halt.scope) == ("max_iteration_cost_usd", 0.5, "session")
    assert halt.used == pytest.approx(0.6)


def test_an_iteration_cost_bound_needs_known_prices_and_a_positive_amount(tmp_path: Path) -> None:
    """Like `max_cost_usd`: a model whose prices are unknown is refused up front, and the
    amount must be positive (the spec's error names the key)."""
    with pytest.raises(ConfigurationError, match="prices are unknown"):
        harness([priced(CLAIM, None)], tmp_path, budget=Budget(max_iteration_cost_usd=1.0))
    with pytest.raises(ConfigurationError, match="'max_iteration_cost_usd' must be a positive"):
        Budget(max_iteration_cost_usd=0)
    with pytest.raises(ConfigurationError, match=r"budget\.max_iteration_cost_usd must be a num"):
        Budget.from_config({"max_iteration_cost_usd": "1"})


def test_harness_run_prints_and_reports_the_verified_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The summary names the cost of the verified result; --json has `spent` always and
    `verified_cost` on a verified run only (null otherwise)."""
    (tmp_path / "ws").mkdir()
    script = [priced(CLAIM, 0.01), priced(WRITE, 0.02), priced(CLAIM, 0.03)]
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(line) for line in script) + "\n")
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'prompt = "x"\nworkspace = "ws"\ntools = ["write_file"]\n'
        '[model]\ntype = "fixture"\npath = "s.jsonl"\n'
        '[budget]\nmax_turns = 5\n[[checks]]\ntype = "files"\npaths = ["done.txt"]\n'
    )
    assert main(["run", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "  cost of the verified result: $0.0600, 330 tokens, " in out
    (tmp_path / "ws" / "done.txt").unlink()
    assert main(["run", str(spec), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verified_cost"] == data["spent"]
    assert data["spent"]["cost_usd"] == pytest.approx(0.06)
    assert data["spent"]["total_tokens"] == 330

    (tmp_path / "ws" / "done.txt").unlink()
    (tmp_path / "s.jsonl").write_text(json.dumps(priced(CLAIM, None)) + "\n")
    spec.write_text(spec.read_text().replace("max_turns = 5", "max_turns = 1"))
    assert main(["run", str(spec), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["verified_cost"] is None
    assert data["spent"]["cost_usd"] is None  # unknown, not 0


def _board(root: Path) -> Path:
    """Task `a` fails once on a server error (its first attempt costs $0.01) and is verified on
    its second ($0.02 + $0.03); `b` is verified, its model unpriced; `c` ends for review."""
    retry = {"error": {"message": "overloaded", "kind": "server", "retryable": True}}
    a_two = writes("a.txt")
    a_two[0]["usage"] = {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.02}
    a_two[1]["usage"] = {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.03}
    return make_board(
        root,
        {
            "a": task_toml("a"),
            "b": task_toml("b"),
            "c": task_toml("c", extra="[budget]\nmax_turns = 1"),
        },
        {
            "a.1": [priced(WRITE, 0.01), retry],
            "a.2": a_two,
            "b.1": [priced(line, None) for line in writes("b.txt")],
            "c.1": [priced(CLAIM, 0.04)],
        },
        per_attempt=True,
    )


def test_board_status_reports_cost_per_attempt_and_per_verified_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`status --json` gives each task what each attempt spent and, once verified, what
    getting there cost (the failed attempt included); the board's totals are unknown when one
    task's price is; the table has a COST column and a line of totals."""
    board = _board(tmp_path / "board")
    state = tmp_path / "state"
    assert main(["board", "run", str(board), "--state", str(state), "-q"]) == 1
    capsys.readouterr()
    assert main(["board", "status", str(board), "--state", str(state), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    tasks = {t["id"]: t for t in data["tasks"]}
    a = tasks["a"]["cost"]
    assert [(x["number"], x["outcome"]) for x in a["attempts"]] == [(1, "retry"), (2, "complete")]
    assert [x["spent"]["cost_usd"] for x in a["attempts"]] == [
        pytest.approx(0.01),
        pytest.approx(0.05),
    ]
    assert a["verified_cost"]["cost_usd"] == pytest.approx(0.06)
    assert a["verified_cost"]["attempts"] == 2
    assert a["verified_cost"]["total_tokens"] == 330
    assert tasks["b"]["cost"]["verified_cost"]["cost_usd"] is None  # unknown, never $0
    assert tasks["c"]["status"] == "review"
    assert tasks["c"]["cost"]["verified_cost"] is None
    assert tasks["c"]["cost"]["spent"]["cost_usd"] == pytest.approx(0.04)
    total = data["cost"]
    assert total["verified_tasks"] == 2
    assert total["spent"]["attempts"] == 4
    assert total["spent"]["cost_usd"] is None
    assert total["spent_per_verified_task_usd"] is None

    assert main(["board", "status", str(board), "--state", str(state), "--all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["TASK", "STATUS", "ROLE", "PRI", "TRIES", "COST", "TITLE"]
    costs = {line.split()[0]: line.split()[5] for line in lines[2:5]}
    assert costs == {"a": "$0.0600", "b": "unknown", "c": "$0.0400"}
    assert (
        "spent unknown on 4 attempt(s); 2 verified: unknown spent per verified task, "
        "unknown each on average"
    ) in lines


def test_the_board_figures_add_up() -> None:
    """Per verified task: the mean of what each verified task cost, and everything spent
    (failures included) over their number; an open attempt is counted apart."""
    rows = [
        _row("a", 1, "retry", 0.01),
        _row("a", 2, "complete", 0.05),
        _row("b", 1, "complete", 0.02, status="complete"),
        _row("c", 1, "review", 0.04, status="review"),
        _row("d", 1, None, None, status="in_progress", ended=False),
    ]
    from strategies.board._cost import task_costs

    costs = task_costs(rows)
    assert isinstance(costs["a"], TaskCost)
    verified = costs["a"].verified_cost
    assert verified is not None
    assert (verified.attempts, verified.input_tokens, verified.wall_time) == (2, 200, 2.0)
    assert verified.cost_usd == pytest.approx(0.06)
    assert costs["d"].open == 1
    assert costs["d"].spent == Spending()
    total = board_cost(costs)
    assert total.verified_tasks == 2
    assert total.spent.cost_usd == pytest.approx(0.12)
    assert total.mean_verified_task_usd == pytest.approx(0.04)
    assert total.spent_per_verified_task_usd == pytest.approx(0.06)
    assert total.open_attempts == 1
    broken = task_costs([_row("e", 1, "complete", 0.01, status="complete", usage="{not json")])
    assert broken["e"].spent.cost_usd is None


def test_the_board_totals_agree_however_they_are_read() -> None:
    """SQLite's JSON functions (what `board status` uses), the one-pass fold (where SQLite has
    none) and the per-task costs give the same totals, over malformed, unpriced, boolean and
    negative figures and open attempts alike."""
    import sqlite3

    from strategies.board._cost import board_totals, sql_totals, task_costs

    def usage(**fields: Any) -> str:
        return json.dumps(fields)

    rows = [
        _row("a", 1, "retry", 0.01),
        _row("a", 2, "complete", 0.05),
        _row("b", 1, "complete", None, status="complete"),
        _row("c", 1, "review", 0.04, status="review"),
        _row("d", 1, None, None, status="in_progress", ended=False),
        _row("e", 1, "complete", None, usage="{not json"),
        _row("f", 1, "complete", None, usage=usage(input_tokens=True, cost_usd=0.1)),
        _row("g", 1, "complete", None, usage=usage(input_tokens=-1, cost_usd=0.1)),
        _row("h", 1, "review", None, status="review", usage=usage(cost_usd=-0.1)),
        _row("i", 1, "review", None, status="review", usage="[1, 2]"),
        _row("j", 1, "complete", None, usage=usage(input_tokens=7, cost_usd=2)),
        {**_row("k", 1, "failed", 0.5, status="failed"), "usage": None},
        _row("l", 1, "complete", 0.25),
    ]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE tasks (id TEXT PRIMARY KEY, status TEXT)")
    db.execute(
        "CREATE TABLE attempts (task_id TEXT, number INTEGER, agent TEXT, outcome TEXT, "
        "usage TEXT, elapsed REAL, ended_at REAL)"
    )
    for row in rows:
        db.execute("INSERT OR REPLACE INTO tasks VALUES (?, ?)", (row["task_id"], row["status"]))
        db.execute(
            "INSERT INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?)",
            tuple(row[k] for k in ATTEMPT_COLUMNS),
        )
    folded = board_totals(
        (r["task_id"], r["usage"], r["elapsed"], r["ended_at"], r["status"]) for r in rows
    )
    by_task = board_cost(task_costs(rows))
    by_sql = sql_totals(db)
    assert by_sql == folded == by_task
    assert by_sql is not None
    assert by_sql.spent.cost_usd is None  # some attempts are unpriced
    assert (by_sql.spent.attempts, by_sql.verified_tasks, by_sql.open_attempts) == (12, 7, 1)
    assert by_sql.spent.input_tokens == 100 * 5 + 7
    priced = [r for r in rows if r["task_id"] in ("a", "c", "l")]
    assert _cost_of(priced) == pytest.approx(0.35)


ATTEMPT_COLUMNS = ("task_id", "number", "agent", "outcome", "usage", "elapsed", "ended_at")


def _cost_of(rows: list[dict[str, Any]]) -> float | None:
    from strategies.board._cost import board_totals

    total = board_totals(
        (r["task_id"], r["usage"], r["elapsed"], r["ended_at"], r["status"]) for r in rows
    )
    return total.spent.cost_usd


def _row(
    task: str,
    number: int,
    outcome: str | None,
    cost: float | None,
    *,
    status: str = "complete",
    ended: bool = True,
    usage: str | None = None,
) -> dict[str, Any]:
    if usage is None and ended:
        usage = json.dumps(
            {"input_tokens": 100, "output_tokens": 10, "cached_tokens": 0, "cost_usd": cost}
        )
    return {
        "task_id": task,
        "number": number,
        "agent": "w-1",
        "outcome": outcome,
        "usage": usage,
        "elapsed": 1.0 if ended else None,
        "ended_at": 5.0 if ended else None,
        "status": status,
    }


def test_the_viewer_shows_cost_per_attempt_and_per_verified_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The board index: the totals under the title, each task's cost (saying it was verified
    after how many attempts), each attempt's cost; text, never markup."""
    board = _board(tmp_path / "board")
    state = tmp_path / "state"
    main(["board", "run", str(board), "--state", str(state), "-q"])
    capsys.readouterr()
    assert main(["view", str(state)]) == 0
    index = Path(capsys.readouterr().out.strip())
    page = parse(index.read_text(encoding="utf-8"))
    assert "spent unknown on 4 attempt(s); 2 verified" in page.find("p", "cost").text()
    rows = {r.attrs["id"]: r for r in page.find("table", "tasks").find("tbody").find_all("tr")}
    assert rows["task-a"].find("td", "cost").text() == "$0.0600 (verified after 2 attempt(s))"
    assert rows["task-b"].find("td", "cost").text() == "unknown (verified after 1 attempt(s))"
    assert rows["task-c"].find("td", "cost").text() == "$0.0400"
    attempts = page.find("table", "attempts").find("tbody").find_all("tr")
    by_attempt = {r.find("code").text(): r.find("td", "cost").text() for r in attempts}
    assert by_attempt == {
        "a #1": "$0.0100",
        "a #2": "$0.0500",
        "b #1": "unknown",
        "c #1": "$0.0400",
    }
