"""The workspace file tools open every path by a descriptor walk that never follows a link out
of the workspace (even one swapped in mid-call), and read only what they return."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import re
import sys
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _tools_support import tool_results
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness._fs._workspace as workspace_module
import harness._tools._builtin as builtin
from harness import (
    ToolCall,
    ToolContext,
    WorkspaceEscape,
    list_files,
    read_file,
    resolve_in_workspace,
    workspace_tools,
    write_file,
)
from harness.extend import SessionStore
from harness.testing import FakeClock


def _context(workspace: Path) -> ToolContext:
    return ToolContext(workspace, SessionStore(), FakeClock(), ToolCall("c1", "t", {}), "builder")


def _read(ctx: ToolContext, path: str, **kwargs: Any) -> str:
    return str(read_file.fn(path=path, ctx=ctx, **kwargs))


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with a real folder and links inside it, and an outside folder with a secret."""
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    (workspace / "real" / "deep").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret")
    (workspace / "real" / "deep" / "note.txt").write_text("inside note")
    (workspace / "out_dir").symlink_to(outside)
    (workspace / "out_file").symlink_to(outside / "secret.txt")
    (workspace / "out_rel").symlink_to("../outside/secret.txt")
    (workspace / "in_dir").symlink_to("real/deep")
    (workspace / "in_abs").symlink_to(workspace / "real" / "deep" / "note.txt")
    return workspace, outside


# --- links -----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_link_pointing_outside_is_an_error_result_the_model_sees(
    layout: tuple[Path, Path],
) -> None:
    """Reading, writing or listing through a link that leads outside (absolute or relative,
    a folder or a file) is refused with a `WorkspaceEscape` naming the link; nothing outside
    is read or written."""
    workspace, outside = layout
    calls = [
        ("read_file", {"path": "out_dir/secret.txt"}),
        ("read_file", {"path": "out_file"}),
        ("read_file", {"path": "out_rel"}),
        ("write_file", {"path": "out_dir/new.txt", "content": "x"}),
        ("write_file", {"path": "out_file", "content": "overwritten"}),
        ("list_files", {"path": "out_dir"}),
    ]
    results = await tool_results(calls, workspace_tools(), workspace)
    assert len(results) == len(calls)
    links = ["out_dir", "out_file", "out_rel", "out_dir", "out_file", "out_dir"]
    for (content, is_error), link in zip(results, links, strict=True):
        assert is_error
        assert content.startswith("error: WorkspaceEscape: path ")
        assert "is outside the workspace" in content
        assert f"(through the link {link!r} -> " in content
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "outside secret"


def test_links_that_stay_inside_are_followed(layout: tuple[Path, Path]) -> None:
    """A link to a folder or a file inside the workspace (relative or absolute) works for
    reading and writing; `resolve_in_workspace` returns the real path."""
    workspace, _ = layout
    ctx = _context(workspace)
    assert _read(ctx, "in_dir/note.txt") == "inside note"
    assert _read(ctx, "in_abs") == "inside note"
    assert write_file.fn(path="in_dir/made.txt", content="made", ctx=ctx) == (
        "wrote 4 bytes to in_dir/made.txt"
    )
    assert (workspace / "real" / "deep" / "made.txt").read_text() == "made"
    real = workspace.resolve() / "real" / "deep"
    assert resolve_in_workspace(workspace, "in_dir/note.txt") == real / "note.txt"
    # `..` after a link climbs from where the link leads, as the kernel would have it.
    assert resolve_in_workspace(workspace, "in_dir/../deep/x/y") == real / "x" / "y"
    assert resolve_in_workspace(workspace, "missing/../real") == real.parent
    assert resolve_in_workspace(workspace, str(workspace / "real")) == real.parent
    assert resolve_in_workspace(workspace, "real/deep/note.txt/below") == real / "note.txt/below"


@pytest.mark.parametrize(
    ("path", "through"),
    [
        ("../outside/secret.txt", None),
        ("real/../../outside", None),
        ("/etc/passwd", None),
        ("out_dir", "out_dir"),
        ("out_rel", "out_rel"),
        ("in_dir/../../../outside", "in_dir"),
    ],
)
def test_resolve_refuses_every_way_out(
    layout: tuple[Path, Path], path: str, through: str | None
) -> None:
    """``..`` above the root, an absolute path elsewhere and a link outside all escape."""
    workspace, _ = layout
    with pytest.raises(WorkspaceEscape, match="is outside the workspace") as caught:
        resolve_in_workspace(workspace, path)
    assert (f"through the link {through!r}" in str(caught.value)) == (through is not None)


def test_a_link_loop_is_an_error_not_a_hang(tmp_path: Path) -> None:
    """Two links pointing at each other fail as the kernel would (too many levels of links)."""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(OSError, match="Too many levels of symbolic links") as caught:
        _read(_context(tmp_path), "a/x")
    assert caught.value.errno == errno.ELOOP
    assert caught.value.filename == "a/x"


def test_a_platform_without_dir_fd_support_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ``os.open`` has no ``dir_fd`` or ``O_NOFOLLOW``, every access fails and says why."""
    monkeypatch.setattr(workspace_module, "SUPPORTED", False)
    with pytest.raises(OSError, match=r"dir_fd, O_NOFOLLOW and O_DIRECTORY .* lacks") as caught:
        _read(_context(tmp_path), "a.txt")
    assert sys.platform in str(caught.value)


# --- the race --------------------------------------------------------------------------------

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_TRIES = 2_000


def _exchanger() -> Callable[[Path, Path], None]:
    """Atomically swap two paths (Linux's renameat2 with RENAME_EXCHANGE)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None or not sys.platform.startswith("linux"):
        pytest.skip("the swap needs Linux's renameat2(RENAME_EXCHANGE)")

    def exchange(a: Path, b: Path) -> None:
        if renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    return exchange


class _Swapper:
    """A thread that swaps `workspace/sub` (a folder) with a link to `outside`, as fast as it
    can, until stopped; the swap is one atomic rename, so `sub` always exists."""

    def __init__(self, workspace: Path, outside: Path) -> None:
        self.exchange = _exchanger()
        self.sub = workspace / "sub"
        self.link = workspace / "link"
        self.sub.mkdir()
        self.link.symlink_to(outside)
        self.exchange(self.sub, self.link)  # fails here, not in the thread, if unsupported
        self.exchange(self.sub, self.link)
        self.stop = threading.Event()
        self.swaps = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            self.exchange(self.sub, self.link)
            self.swaps += 1

    def __enter__(self) -> _Swapper:
        self.interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # hand the GIL over often, so the swaps interleave
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        sys.setswitchinterval(self.interval)
        assert not self.thread.is_alive()


def _attempts(action: Callable[[int], object]) -> Iterator[object]:
    for i in range(_TRIES):
        try:
            yield action(i)
        except (OSError, ValueError) as exc:  # refused, or the folder vanished mid-walk
            yield exc


def test_a_racing_link_swap_never_lets_a_write_out(tmp_path: Path) -> None:
    """While a thread swaps a folder on the path for a link to outside, thousands of writes
    through that folder land inside or are refused: none lands outside."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    ctx = _context(workspace)
    with _Swapper(workspace, outside) as swapper:
        outcomes = list(
            _attempts(lambda i: write_file.fn(path=f"sub/f{i}.txt", content="x", ctx=ctx))
        )
    assert os.listdir(outside) == []
    written = len(os.listdir(workspace / "sub")) + len(os.listdir(workspace / "link"))
    refused = sum(isinstance(o, WorkspaceEscape) for o in outcomes)
    assert written + refused + sum(isinstance(o, OSError) for o in outcomes) == _TRIES
    assert swapper.swaps > 0
    assert written > 0  # the race really ran both ways
    assert refused > 0


def test_a_racing_link_swap_never_lets_a_read_out(tmp_path: Path) -> None:
    """The same race for reads: no read ever returns the outside file's content."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "f.txt").write_text("outside secret")
    ctx = _context(workspace)
    swapper = _Swapper(workspace, outside)
    (workspace / "sub" / "f.txt").write_text("inside")
    with swapper:
        outcomes = list(_attempts(lambda _: _read(ctx, "sub/f.txt")))
    assert "outside secret" not in outcomes
    assert "inside" in outcomes
    assert any(isinstance(o, WorkspaceEscape) for o in outcomes)


# --- bounded reads ---------------------------------------------------------------------------


def test_reading_a_huge_file_holds_only_what_it_returns(tmp_path: Path) -> None:
    """A 300 MB file (sparse, so it costs no disk) is read 200,000 bytes at a time: memory
    peaks near that, not near the file's size, and the result says where to read on."""
    (tmp_path / "big.bin").touch()
    os.truncate(tmp_path / "big.bin", 300 * 1024 * 1024)
    ctx = _context(tmp_path)
    tracemalloc.start()
    try:
        text = _read(ctx, "big.bin")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(text) < 200_000 + 200
    assert peak < 800_000  # the bytes, their text and the result, each once: not 300 MB
    size = 300 * 1024 * 1024
    assert text.endswith(
        f"[... truncated: this is bytes 0-200000 of {size}; "
        "call read_file with offset=200000 to read on]"
    )
    tail = _read(ctx, "big.bin", offset=size - 10)
    assert tail == "\0" * 10


_NEXT = re.compile(
    r"\n\[\.\.\. truncated: this is bytes \d+-\d+ of \d+; call read_file with "
    r"offset=(\d+) to read on\]$"
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(st.characters(codec="utf-8"), max_size=300),
    limit=st.integers(min_value=1, max_value=40),
)
def test_reading_on_from_each_offset_gives_back_the_whole_file(
    tmp_path: Path, text: str, limit: int
) -> None:
    """Chunks cut at a line end or a character boundary, followed by their `offset=`, join
    into exactly the file's text."""
    (tmp_path / "f.txt").write_bytes(text.encode("utf-8"))
    ctx = _context(tmp_path)
    pieces, offset = [], 0
    for _ in range(len(text.encode("utf-8")) + 1):
        chunk = _read(ctx, "f.txt", offset=offset, limit=limit)
        match = _NEXT.search(chunk)
        if match is None:
            pieces.append(chunk)
            break
        pieces.append(chunk[: match.start()])
        assert int(match.group(1)) > offset
        offset = int(match.group(1))
    assert "".join(pieces) == text


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"offset": -1}, "'offset' must be >= 0 (got -1)"),
        ({"limit": 0}, "'limit' must be >= 1 (got 0)"),
        ({"offset": 99}, "'offset' 99 is past the end of 'f.txt' (5 bytes)"),
    ],
)
def test_bad_offsets_and_limits_are_refused(
    tmp_path: Path, kwargs: dict[str, int], message: str
) -> None:
    (tmp_path / "f.txt").write_text("hello")
    with pytest.raises(ValueError, match=re.escape(message)):
        _read(_context(tmp_path), "f.txt", **kwargs)


def test_a_fifo_or_a_folder_is_refused_without_blocking(tmp_path: Path) -> None:
    """Reading a FIFO (which could block forever) or a folder, and writing to either, fail at
    once with an error naming the path."""
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    ctx = _context(tmp_path)
    errors: list[BaseException] = []

    def attempt(call: Callable[[], object]) -> None:
        try:
            call()
        except (OSError, ValueError) as exc:
            errors.append(exc)

    calls: list[Callable[[], object]] = [
        lambda: _read(ctx, "pipe"),
        lambda: _read(ctx, "folder"),
        lambda: write_file.fn(path="pipe", content="x", ctx=ctx),  # no reader
        lambda: write_file.fn(path="folder", content="x", ctx=ctx),
    ]
    for call in calls:  # in a thread, so a regression fails the test instead of hanging it
        worker = threading.Thread(target=attempt, args=(call,), daemon=True)
        worker.start()
        worker.join(timeout=10)
        assert not worker.is_alive(), "a tool call blocked"
    assert [str(e) for e in errors[:2]] == ["'pipe' is not a regular file", "'folder' is a folder"]
    assert isinstance(errors[1], IsADirectoryError)
    assert [type(e) for e in errors[2:]] == [OSError, IsADirectoryError]
    assert str(errors[2]) == "[Errno 6] No such device or address: 'pipe'"


# --- listing and writing ---------------------------------------------------------------------


def test_list_files_skips_git_and_never_descends_through_a_link(
    layout: tuple[Path, Path],
) -> None:
    """Files are listed relative to the workspace, `.git` is skipped, and a linked folder is
    not walked into (a linked file is listed by its own name)."""
    workspace, _ = layout
    (workspace / ".git").mkdir()
    (workspace / ".git" / "HEAD").write_text("ref")
    (workspace / "real" / "top.txt").write_text("t")
    ctx = _context(workspace)
    assert str(list_files.fn(ctx=ctx)).splitlines() == [
        "in_abs",
        "out_file",
        "out_rel",
        "real/deep/note.txt",
        "real/top.txt",
    ]
    assert list_files.fn(ctx=ctx, path="real/deep") == "real/deep/note.txt"
    assert list_files.fn(ctx=ctx, path="in_dir") == "real/deep/note.txt"


def test_a_long_listing_is_cut_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(30):
        (tmp_path / f"file{i:02}.txt").write_text("")
    monkeypatch.setattr(builtin, "MAX_LIST", 100)
    lines = str(list_files.fn(ctx=_context(tmp_path))).splitlines()
    assert lines[:2] == ["file00.txt", "file01.txt"]
    assert (
        lines[-1]
        == f"[... truncated: {30 - len(lines) + 1} more files; list a subfolder to see them]"
    )
    assert sum(len(line) + 1 for line in lines[:-1]) <= 101


def test_write_file_makes_the_folders_on_the_way_and_replaces_content(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    assert write_file.fn(path="a/b/c.txt", content="héllo", ctx=ctx) == "wrote 6 bytes to a/b/c.txt"
    assert write_file.fn(path="a/b/c.txt", content="hi", ctx=ctx) == "wrote 2 bytes to a/b/c.txt"
    assert (tmp_path / "a" / "b" / "c.txt").read_text() == "hi"
    with pytest.raises(NotADirectoryError, match=re.escape("'a/b/c.txt/d'")):
        write_file.fn(path="a/b/c.txt/d", content="", ctx=ctx)


def test_missing_paths_and_runs_without_a_workspace_say_what_is_wrong(tmp_path: Path) -> None:
    """A missing folder or file is an error naming the path as the model wrote it; a run
    without a workspace refuses file tools; an empty folder lists as such."""
    ctx = _context(tmp_path)
    with pytest.raises(FileNotFoundError, match=re.escape("'nope/x.txt'")):
        _read(ctx, "nope/x.txt")
    assert list_files.fn(ctx=ctx) == "(no files)"
    no_workspace = ToolContext(None, SessionStore(), FakeClock(), ToolCall("c", "t", {}), "b")
    with pytest.raises(RuntimeError, match="this run has no workspace"):
        _read(no_workspace, "x")
    root = tmp_path.resolve()
    assert resolve_in_workspace(tmp_path, str(tmp_path)) == root
    assert resolve_in_workspace(tmp_path, f"{tmp_path}/") == root
    with pytest.raises(WorkspaceEscape):
        resolve_in_workspace(tmp_path, "missing/../../x")


def test_a_long_file_is_cut_at_a_line_end_in_its_second_half(tmp_path: Path) -> None:
    """Cutting after the last line end keeps lines whole; bytes that are not UTF-8 are cut
    where the limit falls and shown replaced."""
    (tmp_path / "lines.txt").write_text("a\nbbbb\ncc\ndddd")
    (tmp_path / "binary.bin").write_bytes(b"\xff\xfe\x80\x80\x80\x80\x80")
    ctx = _context(tmp_path)
    assert _read(ctx, "lines.txt", limit=11).startswith(
        "a\nbbbb\ncc\n\n[... truncated: this is bytes 0-10 "
    )
    assert _read(ctx, "lines.txt", limit=9).startswith(
        "a\nbbbb\n\n[... truncated: this is bytes 0-7 "
    )
    assert _read(ctx, "binary.bin", limit=5).startswith(
        "\ufffd" * 5 + "\n[... truncated: this is bytes 0-5 "
    )
