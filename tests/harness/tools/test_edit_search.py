"""`edit_file` replaces exact text that occurs once (or everywhere when asked) and says the count
when it does not; `search_files` finds lines by regular expression, capped, skipping binary
files and ignored folders; both stay inside the workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _tools_support import tool_results

from harness import ToolCall, ToolContext, edit_file, search_files, workspace_tools
from harness.extend import ProtectedPaths, SessionStore
from harness.testing import FakeClock


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\nX = 1\nY = 1\n")
    (tmp_path / "outside.txt").write_text("return secret\n")
    return root


@pytest.mark.anyio
async def test_an_exact_unique_string_is_replaced(workspace: Path) -> None:
    """The one occurrence is replaced and the result says so; nothing else changes."""
    calls = [("edit_file", {"path": "pkg/calc.py", "old": "a - b", "new": "a + b"})]
    [(content, is_error)] = await tool_results(calls, [edit_file], workspace)
    assert (content, is_error) == ("replaced 1 occurrence in pkg/calc.py (46 bytes now)", False)
    assert (workspace / "pkg" / "calc.py").read_text() == (
        "def add(a, b):\n    return a + b\n\n\nX = 1\nY = 1\n"
    )


@pytest.mark.anyio
async def test_an_ambiguous_or_missing_string_is_an_error_with_the_count(workspace: Path) -> None:
    """Two occurrences without replace_all, or none, is an error naming the count, and the
    file is untouched; replace_all replaces every one."""
    before = (workspace / "pkg" / "calc.py").read_text()
    calls = [
        ("edit_file", {"path": "pkg/calc.py", "old": " = 1", "new": " = 2"}),
        ("edit_file", {"path": "pkg/calc.py", "old": "a * b", "new": "a + b"}),
        ("edit_file", {"path": "pkg/calc.py", "old": "", "new": "x"}),
    ]
    results = await tool_results(calls, [edit_file], workspace)
    assert results[0][1]
    assert "'old' occurs 2 times in 'pkg/calc.py'; nothing changed" in results[0][0]
    assert results[1][1]
    assert "'old' was not found in 'pkg/calc.py' (0 occurrences)" in results[1][0]
    assert results[2][1]
    assert "'old' must not be empty" in results[2][0]
    assert (workspace / "pkg" / "calc.py").read_text() == before
    every = [
        ("edit_file", {"path": "pkg/calc.py", "old": " = 1", "new": " = 2", "replace_all": True})
    ]
    [(content, is_error)] = await tool_results(every, [edit_file], workspace)
    assert not is_error
    assert content.startswith("replaced 2 occurrences in pkg/calc.py")
    assert (workspace / "pkg" / "calc.py").read_text().endswith("X = 2\nY = 2\n")


@pytest.mark.anyio
async def test_edit_file_stays_inside_the_workspace_and_refuses_non_text(
    workspace: Path, tmp_path: Path
) -> None:
    """A path or a link leading outside is refused; so are a binary (non-UTF-8) file and a
    folder; nothing outside changes."""
    (workspace / "link.txt").symlink_to(tmp_path / "outside.txt")
    (workspace / "blob.bin").write_bytes(b"\xff\xfe return \x00")
    calls = [
        ("edit_file", {"path": "../outside.txt", "old": "secret", "new": "x"}),
        ("edit_file", {"path": "link.txt", "old": "secret", "new": "x"}),
        ("edit_file", {"path": "blob.bin", "old": "return", "new": "x"}),
        ("edit_file", {"path": "pkg", "old": "a", "new": "b"}),
    ]
    results = await tool_results(calls, [edit_file], workspace)
    assert all(is_error for _, is_error in results)
    assert "WorkspaceEscape" in results[0][0]
    assert "WorkspaceEscape" in results[1][0]
    assert "'blob.bin' is not UTF-8 text" in results[2][0]
    assert "is a folder" in results[3][0] or "IsADirectoryError" in results[3][0]
    assert (tmp_path / "outside.txt").read_text() == "return secret\n"


@pytest.mark.anyio
async def test_search_gives_file_and_line_and_skips_what_it_should(
    workspace: Path, tmp_path: Path
) -> None:
    """Matches come as `file:line: text` in path order; binary files, .git and .venv are
    skipped, a link is not followed, and an invalid pattern is an error."""
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("return from git\n")
    (workspace / ".venv").mkdir()
    (workspace / ".venv" / "lib.py").write_text("return from venv\n")
    (workspace / "image.png").write_bytes(b"\x89PNG\x00return")
    (workspace / "out.txt").symlink_to(tmp_path / "outside.txt")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search_files", {"pattern": r"return \w"}),
        ("search_files", {"pattern": "RETURN A", "path": "pkg/calc.py", "ignore_case": True}),
        ("search_files", {"pattern": "nowhere"}),
        ("search_files", {"pattern": "("}),
        ("search_files", {"pattern": "x", "path": ".."}),
    ]
    results = await tool_results(calls, [search_files], workspace)
    assert results[0] == ("pkg/calc.py:2:     return a - b\n[1 binary file(s) skipped]", False)
    assert results[1] == ("pkg/calc.py:2:     return a - b", False)
    assert results[2] == (
        "no matches for 'nowhere' in 2 file(s)\n[1 binary file(s) skipped]",
        False,
    )
    assert results[3][1]
    assert "'pattern' is not a valid regular expression" in results[3][0]
    assert results[4][1]
    assert "WorkspaceEscape" in results[4][0]


@pytest.mark.anyio
async def test_search_numbers_lines_as_an_editor_does_and_is_capped(workspace: Path) -> None:
    """Lines are counted at newlines only (a form feed does not start one); results stop at
    200 lines with a note, a long line is cut, and a big file is read only in its first
    megabyte."""
    (workspace / "pkg" / "other.py").write_text("a\fb\nneedle\n")
    (workspace / "many.txt").write_text("needle\n" * 500)
    (workspace / "long.txt").write_text("needle" + "z" * 1000 + "\n")
    (workspace / "big.txt").write_text("q" * 1_100_000 + "\nneedle\n")
    calls = [
        ("search_files", {"pattern": "needle", "path": "pkg"}),
        ("search_files", {"pattern": "needle"}),
    ]
    results = await tool_results(calls, [search_files], workspace)
    assert results[0] == ("pkg/other.py:2: needle", False)
    lines = results[1][0].split("\n")
    assert sum(line.startswith("many.txt:") for line in lines) <= 200
    assert lines[0] == "long.txt:1: needle" + "z" * 294 + " [... line cut]"
    assert "[... stopped after 200 matching lines; narrow the pattern or the path" in lines[-2]
    assert not any(line.startswith("big.txt:") for line in lines)


@pytest.mark.anyio
async def test_search_notes_a_file_read_only_in_part(workspace: Path) -> None:
    """A file larger than the per-file read is searched in its start only, and the result
    says so."""
    (workspace / "big.txt").write_text("needle\n" + "q" * 1_100_000 + "\nneedle\n")
    results = await tool_results(
        [("search_files", {"pattern": "needle", "path": "big.txt"})], [search_files], workspace
    )
    assert results[0] == (
        "big.txt:1: needle\n[1 file(s) searched only in their first 1,000,000 bytes]",
        False,
    )


def test_the_standard_tools_include_the_editor_and_the_search() -> None:
    """`workspace_tools()` offers edit_file (which writes) and search_files (read-only)."""
    tools = {t.name: t for t in workspace_tools()}
    assert not tools["edit_file"].read_only
    assert tools["search_files"].read_only


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["tests/test_a.py", "alias/test_a.py"])
async def test_edit_file_refuses_a_protected_path(tmp_path: Path, path: str) -> None:
    """As write_file does: a protected file, by its name or through a link, is refused with
    the rule, and left as it was."""
    root = tmp_path / "ws"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_a.py").write_text("assert False\n")
    (root / "alias").symlink_to("tests")
    call = ToolCall("c1", "edit_file", {})
    ctx = ToolContext(
        root, SessionStore(), FakeClock(), call, "builder", ProtectedPaths(["tests/**"])
    )
    arguments = {"path": path, "old": "False", "new": "True"}
    result = await edit_file.call(arguments, ctx, time_limit=10.0)
    assert result.is_error
    assert "protected by the rule 'tests/**'" in result.content
    assert (root / "tests" / "test_a.py").read_text() == "assert False\n"
