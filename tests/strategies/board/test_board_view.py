"""`harness view BOARD_DIR`: a page per attempt transcript and an index of the tasks, their
statuses and their attempts, self-contained and escaped like the run page."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from _board_support import DEMO, make_board, task_toml, writes
from _dom import Node, parse
from _view_support import HOSTILE, HOSTILE_ATTR

from strategies._cli import main


def _view(target: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[Path, str]:
    capsys.readouterr()
    assert main(["view", str(target), *extra]) == 0
    captured = capsys.readouterr()
    return Path(captured.out.strip()), captured.err


def _texts(nodes: list[Node]) -> list[str]:
    return [" ".join(n.text().split()) for n in nodes]


def test_the_index_lists_tasks_and_links_a_page_per_attempt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo board, viewed through its state folder: a row per task with its status and
    links to its attempts' pages, a row per attempt with its outcome; each link leads to
    the run viewer's page for that attempt's transcript."""
    state = tmp_path / "state"
    main(["board", "run", str(DEMO), "--agents", "2", "--state", str(state), "-q"])
    index, err = _view(state, capsys)
    assert err == ""
    assert index == state / "view" / "index.html"
    page = parse(index.read_text(encoding="utf-8"))
    rows = page.find("table", "tasks").find("tbody").find_all("tr")
    statuses = {r.attrs["id"]: r.attrs["data-status"] for r in rows}
    assert statuses == {
        "task-schema": "complete",
        "task-api": "complete",
        "task-changelog": "complete",
        "task-docs": "complete",
        "task-release": "review",
    }
    release = next(r for r in rows if r.attrs["id"] == "task-release")
    assert "the completion check rejected 2 claims of done" in release.find("div", "why").text()
    (link,) = release.find_all("a")
    assert (link.attrs["href"], link.text()) == ("release.1.html", "#1 review")
    attempts = page.find("table", "attempts").find("tbody").find_all("tr")
    assert len(attempts) == 5
    for row in attempts:
        (a,) = row.find_all("a")
        href = a.attrs["href"] or ""
        assert href == f"{row.attrs['data-task']}.1.html"
        run_page = parse((index.parent / href).read_text(encoding="utf-8"))
        assert run_page.find("h1").text().startswith("Run ")
    assert "4 complete, 1 review" in page.find("title").text()


def test_the_index_is_self_contained_and_locked_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    main(["board", "run", str(DEMO), "--agents", "2", "--state", str(state), "-q"])
    index, _ = _view(state, capsys)
    page = parse(index.read_text(encoding="utf-8"))
    for node in page.iter():
        for name in ("src", "action", "data", "srcset"):
            assert node.attrs.get(name) is None, (node.tag, name)
        href = node.attrs.get("href")
        assert href is None or (href.endswith(".html") and "/" not in href and ":" not in href)
    assert page.find_all("script") == []
    assert page.find_all("link") == []
    (style,) = page.find_all("style")
    meta = [m for m in page.find_all("meta") if m.attrs.get("http-equiv")]
    policy = meta[0].attrs["content"] or ""
    digest = base64.b64encode(hashlib.sha256(style.text().encode()).digest()).decode()
    assert "default-src 'none'" in policy
    assert "script-src 'none'" in policy
    assert f"style-src 'sha256-{digest}'" in policy


def _hostile_board(root: Path) -> Path:
    """Task a completes; task b's title is hostile and its check wants a file with a hostile
    name, which it never writes, so its reason (and attempt message) carry it."""
    check = f'[[checks]]\ntype = "files"\npaths = [{json.dumps(HOSTILE_ATTR)}]'
    title = f"title = {json.dumps(HOSTILE)}\n[policy]\nmax_rejections = 1"
    return make_board(
        root,
        {"a": task_toml("a"), "b": task_toml("b", check=check, extra=title)},
        {"a": writes("a.txt"), "b": writes("b.txt")},
    )


def test_hostile_titles_and_reasons_are_text_never_markup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Viewed through the board's folder (its .board state): the hostile title and the
    reason quoting a hostile file name show as text; the parser finds no element or
    attribute they could have made."""
    board = _hostile_board(tmp_path / "board")
    main(["board", "run", str(board), "-q"])
    index, _ = _view(board, capsys)
    assert index == board / ".board" / "view" / "index.html"
    page = parse(index.read_text(encoding="utf-8"))
    assert page.find_all("script") == []
    assert page.find_all("svg") == []
    for node in page.iter():
        assert not [a for a in node.attrs if a.startswith("on")], node
    row = next(r for r in page.find_all("tr") if r.attrs.get("id") == "task-b")
    assert HOSTILE in row.text()
    assert HOSTILE_ATTR in row.find("div", "why").text()
    assert row.attrs["data-status"] == "review"


def test_an_attempt_without_a_readable_transcript_has_no_page_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing transcript and a malformed one: the other attempts' pages are written, the
    index names the problem in place of the link, and stderr says which attempt has none."""
    board = _hostile_board(tmp_path / "board")
    main(["board", "run", str(board), "-q"])
    transcripts = board / ".board" / "transcripts"
    (transcripts / "a.1.jsonl").unlink()
    (transcripts / "b.1.jsonl").write_text('{"event": "run.started"\n')
    out = tmp_path / "pages"
    index, err = _view(board, capsys, "-o", str(out))
    assert index == out / "index.html"
    assert "a attempt 1 has no page: no transcript" in err
    assert "b attempt 1 has no page: " in err
    page = parse(index.read_text(encoding="utf-8"))
    assert page.find_all("a") == []
    missing = _texts(page.find("table", "attempts").find_all("span", "missing"))
    assert missing[0] == "no transcript"
    assert "b.1.jsonl" in missing[1]
    assert sorted(p.name for p in out.iterdir()) == ["index.html"]


def test_a_folder_that_is_neither_a_transcript_nor_a_board(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["view", str(tmp_path)]) == 2
    assert "harness: " in capsys.readouterr().err


def test_the_index_is_titled_by_the_board_when_its_state_folder_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness view BOARD/.board` titles the page by the board's folder, as `harness view
    BOARD` does: the state folder's name says nothing about which board it is."""
    board = tmp_path / "myboard"
    shutil.copytree(DEMO, board)
    main(["board", "run", str(board), "--agents", "2", "-q"])
    index, _ = _view(board / ".board", capsys)
    title = parse(index.read_text(encoding="utf-8")).find("title").text()
    assert title.startswith(f"Board {board}:")


def test_the_index_has_the_ledger_of_the_boards_attempts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ledger's section (`harness stats`' figures) closes the index: the demo board's
    verified rate, first-attempt rate, cost per verified task with the failure paid for, why
    the release task stopped and the claims each check sent back."""
    state = tmp_path / "state"
    main(["board", "run", str(DEMO), "--agents", "2", "--state", str(state), "-q"])
    index, _ = _view(state, capsys)
    page = parse(index.read_text(encoding="utf-8"))
    rows = page.find("table", "ledger").find("tbody").find_all("tr")
    figures = dict(_texts(row.find_all("td")) for row in rows)
    assert figures["runs"] == "5 (4 verified)"
    assert figures["verified rate"] == "80%"
    assert figures["first-attempt rate"] == "80%"
    assert figures["cost per verified task (failures included)"] == "$0.0131"
    assert figures["stopped by RejectionLimit"] == "1"
    sent_back = {k: v for k, v in figures.items() if k.startswith("claims sent back by")}
    assert sorted(sent_back.values()) == ["1", "2"]
