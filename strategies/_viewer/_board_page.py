"""The board viewer (`harness view BOARD_DIR`): a page per attempt transcript (the run viewer's
page) and an index page of the tasks, their statuses and their attempts, linking to those pages.

The index is self-contained and locked down like the run page (its Content Security Policy
allows only its stylesheet, by hash, and no script); every piece of text from the board's
database (titles, reasons, messages, agent names) goes through `tag`, which escapes it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from attrs import frozen

from harness import FixtureError
from strategies.board import AttemptState, TaskCost, TaskState, board_cost, open_store

from ._markup import Html, tag
from ._page import _asset, _digest, document
from ._records import TranscriptView

_STYLE = """
.board { border-collapse: collapse; width: 100%; margin: 8px 0 24px; font-size: 13px; }
.board th, .board td { text-align: left; vertical-align: top; padding: 5px 10px;
  border-bottom: 1px solid var(--rule); }
.board th { font-size: 11px; text-transform: uppercase; letter-spacing: .05em;
  color: var(--muted); }
.board td.num { text-align: right; font-variant-numeric: tabular-nums; }
.status { font-weight: 600; white-space: nowrap; }
.status.complete { color: var(--good); } .status.review { color: var(--warn); }
.status.failed, .status.interrupted, .status.retry { color: var(--bad); }
.status.in_progress { color: var(--info); }
.board .why { color: var(--muted); }
.attempt-links a { margin-right: 8px; white-space: nowrap; }
"""


@frozen
class AttemptPage:
    """An attempt of the board and its page: `page` is the file's name in the output folder
    (None when its transcript is missing or unreadable, `problem` then says why)."""

    attempt: AttemptState
    page: str | None
    view: TranscriptView | None = None
    problem: str | None = None


@frozen
class BoardView:
    """What `write_board_view` wrote: the index and the attempts' pages."""

    index: Path
    attempts: tuple[AttemptPage, ...]


def is_board(path: Path) -> bool:
    """True when `path` is a board's folder (with a ``.board`` state) or a state folder."""
    return (path / "board.db").is_file() or (path / ".board" / "board.db").is_file()


def board_state_of(path: Path) -> Path:
    return path if (path / "board.db").is_file() else path / ".board"


def write_board_view(folder: str | Path, out: str | Path) -> BoardView:
    """Write the pages of the board in `folder` (a board's folder or its state folder) into
    the folder `out`: ``index.html`` and ``TASK.N.html`` per attempt. An attempt whose
    transcript is missing or malformed gets no page; the index says why, and the others
    are written all the same."""
    from . import write_view

    root = Path(folder)
    state = board_state_of(root)
    store = open_store(state)
    try:
        tasks = store.tasks()
        attempts = store.attempts()
        counts = store.counts()
        costs = store.costs()
    finally:
        store.close()
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    pages: list[AttemptPage] = []
    for attempt in attempts:
        transcript = attempt.transcript
        if not transcript.is_file():  # the board's folder moved: the state keeps its copies
            transcript = state / "transcripts" / transcript.name
        name = f"{transcript.stem}.html"
        try:
            view = write_view(transcript, target / name)
        except FileNotFoundError:
            pages.append(AttemptPage(attempt, None, problem="no transcript"))
        except FixtureError as exc:
            pages.append(AttemptPage(attempt, None, problem=str(exc)))
        else:
            pages.append(AttemptPage(attempt, name, view))
    index = target / "index.html"
    # A board's state lies in its folder's `.board`: the page is titled by the board, whichever
    # of the two was named (a state folder kept elsewhere is all there is to show).
    board = root.parent if root == state and root.name == ".board" else root
    from ._ledger import read_ledger

    ledger = read_ledger([state]).to_json()
    index.write_text(
        render_board_index(str(board), tasks, pages, counts, costs, ledger),
        encoding="utf-8",
        errors="backslashreplace",
    )
    return BoardView(index, tuple(pages))


def render_board_index(
    folder: str,
    tasks: list[TaskState],
    pages: list[AttemptPage],
    counts: dict[str, int],
    costs: Mapping[str, TaskCost] | None = None,
    ledger: Mapping[str, Any] | None = None,
) -> str:
    """The index page: the counts and what the board spent (per verified task too), a row per
    task with its cost and links to its attempts, a row per attempt with its outcome and
    cost, then the ledger's figures (`harness stats`), when given."""
    costs = costs or {}
    style = _asset("viewer.css") + _STYLE
    policy = (
        "default-src 'none'; base-uri 'none'; form-action 'none'; "
        f"style-src '{_digest(style)}'; script-src 'none'"
    )
    by_task: dict[str, list[AttemptPage]] = {}
    for page in pages:
        by_task.setdefault(page.attempt.task, []).append(page)
    summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n) or "no tasks"
    body = tag(
        "body",
        None,
        tag(
            "header",
            {"class": "top"},
            tag("h1", None, "Board ", tag("span", {"class": "file"}, folder)),
            tag("p", {"class": "source"}, f"{len(tasks)} tasks: {summary}"),
            tag("p", {"class": "source cost"}, _board_spent(costs)),
        ),
        tag(
            "main",
            None,
            tag("h2", None, "Tasks"),
            _tasks_table(tasks, by_task, costs),
            tag("h2", None, "Attempts"),
            _attempts_table(pages, costs),
            *(() if ledger is None else (tag("h2", None, "Ledger"), _ledger_table(ledger))),
        ),
    )
    return document(f"Board {folder}: {summary}", style, policy, body)


def _link(page: AttemptPage, text: str) -> Html:
    if page.page is None:
        return tag("span", {"class": "missing", "title": page.problem or ""}, text)
    return tag("a", {"href": quote(page.page)}, text)


def money(cost: float | None) -> str:
    """``$0.0123``, or ``unknown`` (never $0 for a cost nobody knows)."""
    return "unknown" if cost is None else f"${cost:.4f}"


def _board_spent(costs: Mapping[str, TaskCost]) -> str:
    total = board_cost(dict(costs))
    if not total.spent.attempts:
        return "nothing spent yet"
    line = f"spent {money(total.spent.cost_usd)} on {total.spent.attempts} attempt(s)"
    if total.verified_tasks:
        line += (
            f"; {total.verified_tasks} verified: {money(total.spent_per_verified_task_usd)} "
            f"spent per verified task, {money(total.mean_verified_task_usd)} each on average"
        )
    return line


def _task_cost(cost: TaskCost | None) -> str:
    if cost is None:
        return "-"
    text = money(cost.spent.cost_usd)
    if cost.verified_cost is not None:
        text += f" (verified after {cost.spent.attempts} attempt(s))"
    return text


def _tasks_table(
    tasks: list[TaskState],
    by_task: dict[str, list[AttemptPage]],
    costs: Mapping[str, TaskCost],
) -> Html:
    rows = []
    for task in tasks:
        status = task.status + ("" if task.present else " (file removed)")
        why = None if task.status == "complete" or not task.reason else task.reason
        links = [
            _link(p, f"#{p.attempt.number} {p.attempt.outcome or 'open'}")
            for p in by_task.get(task.id, [])
        ]
        rows.append(
            tag(
                "tr",
                {"id": f"task-{task.id}", "data-status": task.status},
                tag("td", None, tag("code", None, task.id)),
                tag("td", None, tag("span", {"class": f"status {task.status}"}, status)),
                tag("td", None, task.role),
                tag("td", {"class": "num"}, task.priority),
                tag("td", {"class": "num cost"}, _task_cost(costs.get(task.id))),
                tag(
                    "td",
                    None,
                    task.title,
                    tag("div", {"class": "why"}, why) if why else None,
                ),
                tag(
                    "td",
                    {"class": "attempt-links"},
                    links or tag("span", {"class": "empty"}, "none"),
                ),
            )
        )
    headings = ("task", "status", "role", "pri", "cost", "title", "attempts")
    return _table("tasks", headings, rows)


def _attempt_cost(costs: Mapping[str, TaskCost], task: str, number: int) -> str:
    cost = costs.get(task)
    for attempt in cost.attempts if cost is not None else ():
        if attempt.number == number:
            return "-" if attempt.spent is None else money(attempt.spent.cost_usd)
    return "-"


def _attempts_table(pages: list[AttemptPage], costs: Mapping[str, TaskCost]) -> Html:
    if not pages:
        return tag("p", {"class": "empty"}, "No attempt has run yet.")
    rows = []
    for page in pages:
        a = page.attempt
        outcome = a.outcome or ("in progress" if a.ended_at is None else "ended")
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(a.started_at))
        rows.append(
            tag(
                "tr",
                {"data-task": a.task, "data-outcome": outcome},
                tag("td", None, tag("code", None, f"{a.task} #{a.number}")),
                tag("td", None, a.agent),
                tag("td", None, a.engine),
                tag("td", None, started),
                tag(
                    "td",
                    None,
                    tag("span", {"class": f"status {a.outcome or 'in_progress'}"}, outcome),
                    tag("div", {"class": "why"}, a.message) if a.message else None,
                ),
                tag("td", {"class": "num cost"}, _attempt_cost(costs, a.task, a.number)),
                tag("td", None, _link(page, page.page or page.problem or "no page")),
            )
        )
    headings = ("attempt", "agent", "engine", "started", "outcome", "cost", "page")
    return _table("attempts", headings, rows)


def _ledger_table(figures: Mapping[str, Any]) -> Html:
    """The ledger's figures (see `strategies._viewer._ledger`): a row each, then a row per
    halt cause, check and flaky test with its count."""

    def rate(value: object) -> str:
        return "-" if not isinstance(value, int | float) else f"{value:.0%}"

    def mean(value: object) -> str:
        return "-" if not isinstance(value, int | float) else f"{value:.1f}"

    def dollars(value: object) -> str:
        return money(value if isinstance(value, int | float) else None)

    rows = [
        ("runs", f"{figures['runs']} ({figures['verified_runs']} verified)"),
        ("verified rate", rate(figures["verified_rate"])),
        ("first-attempt rate", rate(figures["first_attempt_rate"])),
        ("attempts per verified task", mean(figures["attempts_per_verified_task"])),
        ("iterations per verified task", mean(figures["iterations_per_verified_task"])),
        ("cost per verified task (failures included)", dollars(figures["cost_per_verified_task"])),
    ]
    for title, key in (
        ("stopped by", "halt_causes"),
        ("claims sent back by", "rejections_per_check"),
        ("flaky test", "flaky_tests"),
    ):
        counts = figures[key]
        rows.extend((f"{title} {name}", str(count)) for name, count in counts.items())
    body = [
        tag("tr", None, tag("td", None, name), tag("td", {"class": "num"}, value))
        for name, value in rows
    ]
    return _table("ledger", ("figure", "value"), body)


def _table(kind: str, headings: tuple[str, ...], rows: list[Html]) -> Html:
    head = tag("tr", None, [tag("th", None, h) for h in headings])
    return tag(
        "table", {"class": f"board {kind}"}, tag("thead", None, head), tag("tbody", None, rows)
    )
