"""SQL results in the session: the `sqlite_query_tool` that records them, and `SqlResultCheck`.

The tool runs one query on a read-only SQLite connection and puts a `SqlResult` in the session
store (an error becomes a `SqlResult` with `error` set, and an error result for the model).
`SqlResultCheck` validates the latest result: no error, the expected columns, enough rows.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread
from attrs import field, frozen

from harness import (
    ConfigurationError,
    SessionStateSnapshot,
    Tool,
    ToolContext,
    WorkspaceEscape,
    resolve_in_workspace,
)
from harness.extend import check_positive

from ._compose import Combinable

_PROGRESS_STEPS = 10_000


@frozen
class SqlResult:
    """One query the agent ran and what came back (`rows` stops at the tool's `max_rows`)."""

    query: str
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    error: str | None = None
    truncated: bool = False

    def render(self, shown: int) -> str:
        """A short text table for the model: the columns, the first `shown` rows, the count."""
        if self.error is not None:
            return f"error: {self.error}"
        lines = [" | ".join(self.columns) if self.columns else "(no columns)"]
        lines += [
            " | ".join("NULL" if v is None else str(v) for v in row) for row in self.rows[:shown]
        ]
        count = f"at least {len(self.rows)}" if self.truncated else str(len(self.rows))
        more = f", first {shown} shown" if len(self.rows) > shown else ""
        lines.append(f"({count} rows{more})")
        return "\n".join(lines)


def _execute(path: Path, query: str, max_rows: int, stop: threading.Event) -> SqlResult:
    if not path.is_file():
        return SqlResult(query, error=f"the database {path.name!r} does not exist")
    try:
        with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
            db.execute("PRAGMA query_only = ON")
            db.set_progress_handler(lambda: 1 if stop.is_set() else 0, _PROGRESS_STEPS)
            cursor = db.execute(query)
            columns = tuple(d[0] for d in cursor.description or ())
            rows = cursor.fetchmany(max_rows + 1)
    except sqlite3.Error as exc:
        return SqlResult(query, error=f"{type(exc).__name__}: {exc}")
    truncated = len(rows) > max_rows
    return SqlResult(query, columns, tuple(tuple(r) for r in rows[:max_rows]), None, truncated)


def sqlite_query_tool(
    database: str | Path,
    *,
    name: str = "sql_query",
    max_rows: int = 1000,
    shown_rows: int = 20,
    timeout: float = 30.0,
) -> Tool:
    """A tool that runs one read-only query on the SQLite file `database` for the agent.

    A relative `database` lies in the run's workspace (and may not leave it). Every query's
    `SqlResult` goes into the session store, where `SqlResultCheck` reads the latest one.
    """
    check_positive("max_rows", max_rows, integer=True)
    check_positive("shown_rows", shown_rows, integer=True)

    async def run_query(query: str, ctx: ToolContext) -> str:
        """Run one read-only SQL query on the database and show its result.

        Args:
            query: a single SQL statement (SELECT or WITH ... SELECT)
        """
        path = _locate(database, ctx.workspace)
        stop = threading.Event()
        try:
            result = await anyio.to_thread.run_sync(
                _execute, path, query, max_rows, stop, abandon_on_cancel=True
            )
        finally:
            stop.set()  # a query abandoned at its timeout is interrupted, not left running
        ctx.store.put(result)
        if result.error is not None:
            raise ValueError(result.error)
        return result.render(shown_rows)

    return Tool.from_function(
        run_query,
        name=name,
        description=f"Run one read-only SQL query on the SQLite database {Path(database).name}.",
        timeout=timeout,
        read_only=True,
    )


def _locate(database: str | Path, workspace: Path | None) -> Path:
    path = Path(database)
    if path.is_absolute():
        return path
    if workspace is None:
        raise ValueError(f"the database {str(database)!r} is relative but the run has no workspace")
    try:
        return resolve_in_workspace(workspace, path)
    except WorkspaceEscape as exc:
        raise ValueError(str(exc)) from None


def _columns(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise ConfigurationError(f"'expected_columns' must be a non-empty list (got {value!r})")
    if not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigurationError(f"'expected_columns' must hold column names (got {value!r})")
    return tuple(value)


def _min_rows(instance: object, attribute: object, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ConfigurationError(f"'min_rows' must be an int >= 0 (got {value!r})")


@frozen
class SqlResultCheck(Combinable):
    """Complete when the session's latest `SqlResult` has no error, the expected columns, and
    at least `min_rows` rows (at least one when `min_rows` is None).

    Columns are compared by name, ignoring case and order.
    """

    expected_columns: tuple[str, ...] | None = field(default=None, converter=_columns)
    min_rows: int | None = field(default=None, validator=_min_rows)

    @property
    def needed_rows(self) -> int:
        return 1 if self.min_rows is None else self.min_rows

    def description(self) -> str:
        wanted = []
        if self.expected_columns is not None:
            wanted.append(f"exactly the columns {', '.join(self.expected_columns)}")
        if self.needed_rows:
            wanted.append(f"at least {self.needed_rows} row(s)")
        shape = f" and returns {' and '.join(wanted)}" if wanted else ""
        return f"The last query you run with the SQL tool answers the question{shape}."

    async def check(self, state: SessionStateSnapshot) -> str | None:
        result = state.latest(SqlResult)
        if result is None:
            return "there is no SQL result in this session; run the query that answers the task"
        if result.error is not None:
            return f"your latest query failed ({result.error}); fix it and run it again"
        if self.expected_columns is not None:
            got = {c.lower() for c in result.columns}
            want = {c.lower() for c in self.expected_columns}
            if got != want:
                missing = [c for c in self.expected_columns if c.lower() not in got]
                extra = [c for c in result.columns if c.lower() not in want]
                detail = "; ".join(
                    part
                    for part in (
                        f"missing {', '.join(missing)}" if missing else "",
                        f"unexpected {', '.join(extra)}" if extra else "",
                    )
                    if part
                )
                return (
                    f"the latest result has the columns {', '.join(result.columns) or '(none)'}, "
                    f"expected {', '.join(self.expected_columns)} ({detail})"
                )
        if len(result.rows) < self.needed_rows:
            return (
                f"the latest result has {len(result.rows)} row(s), expected at least "
                f"{self.needed_rows}"
            )
        return None
