"""The SQLite query tool records `SqlResult`s read-only; `SqlResultCheck` reads the latest."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from _checks_support import as_clock, snapshot

from checks import SqlResult, SqlResultCheck, sqlite_query_tool
from harness import ConfigurationError, Tool, ToolCall, ToolContext
from harness.extend import SessionStore
from harness.testing import FakeClock

pytestmark = pytest.mark.anyio


def build_db(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL)")
        db.executemany(
            "INSERT INTO orders (customer, total) VALUES (?, ?)",
            [("ada", 10.0), ("ada", 5.5), ("bob", 7.25), ("cy", None)],
        )
    return path


async def run(tool: Tool, query: str, store: SessionStore, workspace: Path) -> tuple[str, bool]:
    context = ToolContext(
        workspace=workspace,
        store=store,
        clock=as_clock(FakeClock()),
        call=ToolCall("c1", tool.name, {"query": query}),
        agent="agent",
    )
    result = await tool.call({"query": query}, context, time_limit=30)
    return result.content, result.is_error


async def test_the_tool_records_each_query_and_shows_a_table(tmp_path: Path) -> None:
    """A query's columns and rows go into the store; the model sees a short table."""
    build_db(tmp_path / "shop.db")
    tool = sqlite_query_tool("shop.db", shown_rows=2)
    store = SessionStore()
    query = "SELECT customer, SUM(total) AS spent FROM orders GROUP BY customer ORDER BY customer"
    text, failed = await run(tool, query, store, tmp_path)
    assert not failed
    assert text == "customer | spent\nada | 15.5\nbob | 7.25\n(3 rows, first 2 shown)"
    assert store.frozen()[SqlResult] == (
        SqlResult(query, ("customer", "spent"), (("ada", 15.5), ("bob", 7.25), ("cy", None))),
    )


async def test_the_connection_is_read_only(tmp_path: Path) -> None:
    """Writes fail, are recorded as a failed result, and leave the database unchanged."""
    db = build_db(tmp_path / "shop.db")
    tool = sqlite_query_tool(db)
    store = SessionStore()
    text, failed = await run(tool, "DELETE FROM orders", store, tmp_path)
    assert failed
    assert "readonly" in text
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM orders").fetchone() == (4,)
    [result] = store.frozen()[SqlResult]
    assert result.error is not None


async def test_bad_sql_and_a_missing_database_are_failed_results(tmp_path: Path) -> None:
    """A syntax error, two statements at once, or no database are errors the agent sees."""
    build_db(tmp_path / "shop.db")
    store = SessionStore()
    text, failed = await run(sqlite_query_tool("shop.db"), "SELEC 1", store, tmp_path)
    assert failed
    assert text.startswith("error: ValueError: OperationalError: near")
    text, failed = await run(sqlite_query_tool("shop.db"), "SELECT 1; SELECT 2", store, tmp_path)
    assert failed
    assert "one statement at a time" in text
    text, failed = await run(sqlite_query_tool("nope.db"), "SELECT 1", store, tmp_path)
    assert (text, failed) == ("error: ValueError: the database 'nope.db' does not exist", True)


async def test_the_database_may_not_leave_the_workspace(tmp_path: Path) -> None:
    """A relative database path is resolved inside the workspace, never outside it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    build_db(tmp_path / "shop.db")
    tool = sqlite_query_tool("../shop.db")
    result = await tool.call(
        {"query": "SELECT 1"},
        ToolContext(workspace, SessionStore(), as_clock(FakeClock()), ToolCall("c", "x"), "agent"),
        time_limit=30,
    )
    assert result.is_error
    assert "outside the workspace" in result.content


async def test_rows_stop_at_max_rows(tmp_path: Path) -> None:
    """Results longer than `max_rows` are cut and marked, and the model is told."""
    build_db(tmp_path / "shop.db")
    store = SessionStore()
    text, _ = await run(
        sqlite_query_tool("shop.db", max_rows=2), "SELECT id FROM orders", store, tmp_path
    )
    assert text.endswith("(at least 2 rows)")
    [result] = store.frozen()[SqlResult]
    assert result.truncated
    assert result.rows == ((1,), (2,))


async def test_the_check_reads_the_latest_result(tmp_path: Path) -> None:
    """The latest result decides: an earlier good result does not excuse a later bad one."""
    good = SqlResult("q1", ("customer", "spent"), (("ada", 1), ("bob", 2)))
    bad = SqlResult("q2", ("customer",), (("ada",),))
    check = SqlResultCheck(expected_columns=("customer", "spent"), min_rows=2)
    assert await check.check(snapshot(store=[good])) is None
    assert await check.check(snapshot(store=[good, bad])) == (
        "the latest result has the columns customer, expected customer, spent (missing spent)"
    )


def test_description_says_what_the_last_query_must_return() -> None:
    """The description names the columns and the rows the last query must return."""
    check = SqlResultCheck(expected_columns=["name", "total"], min_rows=3)
    assert check.description() == (
        "The last query you run with the SQL tool answers the question and returns exactly "
        "the columns name, total and at least 3 row(s)."
    )
    assert SqlResultCheck(min_rows=0).description() == (
        "The last query you run with the SQL tool answers the question."
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"expected_columns": []}, "'expected_columns' must be a non-empty list"),
        ({"expected_columns": "name"}, "'expected_columns' must be a non-empty list"),
        ({"expected_columns": ["a", ""]}, "'expected_columns' must hold column names"),
        ({"min_rows": -1}, "'min_rows' must be an int >= 0"),
        ({"min_rows": True}, "'min_rows' must be an int >= 0"),
    ],
)
def test_bad_configuration_is_refused(kwargs: dict[str, object], message: str) -> None:
    """Column lists and row counts are validated up front."""
    with pytest.raises(ConfigurationError, match=message):
        SqlResultCheck(**kwargs)  # type: ignore[arg-type]


def test_the_tool_factory_validates_its_limits() -> None:
    """Non-positive row limits are a configuration error."""
    with pytest.raises(ConfigurationError, match="'max_rows' must be a positive int"):
        sqlite_query_tool("x.db", max_rows=0)
