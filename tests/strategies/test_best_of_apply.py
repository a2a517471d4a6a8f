"""Applying a best-of winner under stress, from outside: a process killed with SIGKILL in the
middle of writing a 400-file winner is undone exactly at the next start, which says so; a full
disk while an attempt's workspace is made or the winner is written ends in a typed halt with
the workspace as it was."""

from __future__ import annotations

import errno
import inspect
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _git_support import git, init_repo

from checks import FilesCheck
from harness import Harness, ScriptedModelClient, ToolContext, tool
from harness.events import RunWarning
from harness.testing import FakeClock, ListSink
from strategies import BestOf, NoAttemptVerified, Ralph, WorkspaceUnwritable
from strategies._apply_journal import JOURNAL
from strategies._cli import main
from termination import TerminationPolicy

pytestmark = pytest.mark.anyio

CHANGED, ADDED, DELETED = 200, 150, 49  # with done.txt: 400 files


def project(folder: Path) -> Path:
    files = {f"src/f{i:03}.py": f"old {i}\n" for i in range(CHANGED)}
    files |= {f"old/h{i:02}.txt": f"gone {i}\n" for i in range(DELETED)}
    repo = init_repo(folder, files)
    os.chmod(repo / "src" / "f007.py", 0o755)
    (repo / "untracked.txt").write_text("the user's, uncommitted\n")
    return repo


def rewrite(workspace: Path) -> None:
    for i in range(CHANGED):
        (workspace / "src" / f"f{i:03}.py").write_text(f"new {i}\n")
    for i in range(ADDED):
        added = workspace / "new" / f"d{i // 10}" / f"g{i:03}.py"
        added.parent.mkdir(parents=True, exist_ok=True)
        added.write_text(f"added {i}\n")
    for i in range(DELETED):
        (workspace / "old" / f"h{i:02}.txt").unlink()
    (workspace / "done.txt").write_text("done\n")


@tool
async def rewrite_everything(ctx: ToolContext) -> str:
    """Change 400 files of the workspace."""
    assert ctx.workspace is not None
    rewrite(ctx.workspace)
    return "rewritten"


def state_of(folder: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry of the workspace outside ``.git``: its kind and mode, and content."""
    found: dict[str, tuple[str, bytes | str]] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        info = path.lstat()
        if stat.S_ISDIR(info.st_mode):
            found[rel] = ("dir", "")
        else:
            found[rel] = (oct(info.st_mode), path.read_bytes())
    return found


KILLED_APPLY = """
import sys
import time
from pathlib import Path

import anyio

import strategies._apply_changes as applying
from checks import FilesCheck
from harness import Harness, ScriptedModelClient, ToolContext, tool
from strategies import BestOf, Ralph
from termination import TerminationPolicy

#REWRITE


@tool
async def rewrite_everything(ctx: ToolContext) -> str:
    \"\"\"Change 400 files of the workspace.\"\"\"
    rewrite(ctx.workspace)
    return "rewritten"


repo, marker, after = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
real = applying.replace_with
written = 0


def replace_with(source: Path, target: Path) -> None:
    # The kill's moment, made exact: after `after` files of the winner reached the workspace.
    global written
    real(source, target)
    if target.is_relative_to(repo) and not target.is_relative_to(repo / ".git"):
        written += 1
        if written == after:
            marker.write_text("applying\\n")
            time.sleep(3600)


applying.replace_with = replace_with
rows = [
    {"attempt": 1, "tool_calls": [{"name": "rewrite_everything", "arguments": {}}]},
    {"attempt": 1, "text": "Done."},
]
harness = Harness(
    model=ScriptedModelClient.from_responses(rows),
    policy=TerminationPolicy(completion_check=FilesCheck(["done.txt"])),
    strategy=BestOf(n=1, strategy=Ralph(max_iterations=1)),
    tools=[rewrite_everything],
    workspace=repo,
)
anyio.run(harness.run, "Rewrite everything.")
"""


def kill_mid_apply(repo: Path, tmp_path: Path, after: int) -> None:
    script, marker = tmp_path / "killed_apply.py", tmp_path / "marker"
    sizes = f"CHANGED, ADDED, DELETED = {CHANGED}, {ADDED}, {DELETED}\n\n\n"
    script.write_text(KILLED_APPLY.replace("#REWRITE", sizes + inspect.getsource(rewrite)))
    process = subprocess.Popen(
        [sys.executable, str(script), str(repo), str(marker), str(after)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 240
        while not marker.exists():
            assert process.poll() is None, process.stderr.read() if process.stderr else b""
            assert time.monotonic() < deadline, "the apply never started"
            time.sleep(0.05)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        if process.stderr is not None:
            process.stderr.close()
    assert process.returncode == -signal.SIGKILL


def next_start(repo: Path, sink: ListSink) -> Harness:
    """A best-of run whose one attempt claims done without doing anything: it changes nothing
    of the workspace itself."""
    return Harness(
        model=ScriptedModelClient.from_responses([{"attempt": 1, "text": "Done."}]),
        policy=TerminationPolicy(completion_check=FilesCheck(["done.txt"])),
        strategy=BestOf(n=1, strategy=Ralph(max_iterations=1)),
        workspace=repo,
        clock=FakeClock(),
        sinks=[sink],
    )


async def test_a_winner_killed_half_applied_is_undone_exactly_at_the_next_start(
    tmp_path: Path,
) -> None:
    """SIGKILL after 150 of a 400-file winner's files were written into the workspace leaves
    it half-applied; the next best-of start puts every file back (contents, modes, deleted
    files, no new folder) before anything else, says so in a ``run.warning``, and removes
    the killed run's leftovers."""
    repo = project(tmp_path / "repo")
    before = state_of(repo)
    kill_mid_apply(repo, tmp_path, after=150)
    assert state_of(repo) != before  # half-applied
    assert (repo / "done.txt").exists()
    assert (repo / "new" / "d0" / "g000.py").exists()

    sink = ListSink()
    result = await next_start(repo, sink).run("Check.")

    assert isinstance(result.halt_reason, NoAttemptVerified)
    assert state_of(repo) == before
    warnings = [e for e in sink.events if isinstance(e, RunWarning)]
    assert [w.source for w in warnings] == ["best_of"]
    assert "was interrupted (the process was killed)" in warnings[0].message
    assert "its 400 files were put back as they were" in warnings[0].message
    assert list((repo / ".git" / "harness-best-of").iterdir()) == []
    assert git(repo, "for-each-ref", "refs/heads/harness-best-of/") == ""


async def test_a_file_that_cannot_be_put_back_is_named_and_its_saved_copy_kept(
    tmp_path: Path,
) -> None:
    """After the kill, one folder the undo must write into is now a file: the next start puts
    back every other file, names the one it could not and where its saved copy is, and keeps
    that copy (and the journal) for a later start."""
    repo = project(tmp_path / "repo")
    kill_mid_apply(repo, tmp_path, after=150)
    shutil.rmtree(repo / "old")
    (repo / "old").write_text("in the way\n")

    sink = ListSink()
    await next_start(repo, sink).run("Check.")

    [warning] = [e for e in sink.events if isinstance(e, RunWarning)]
    assert f"{DELETED} of 400 files could not be put back" in warning.message
    assert "old/h00.txt: File exists" in warning.message
    assert not (repo / "done.txt").exists()
    assert not (repo / "new").exists()
    [kept] = (repo / ".git" / "harness-best-of").glob(f"*/applying/{JOURNAL}")
    assert (kept.parent / "saved" / "old" / "h00.txt").read_text() == "gone 0\n"


def no_space_after(count: int, where: Callable[[Path], bool]) -> Callable[..., Any]:
    """`shutil.copyfile` (under `shutil.copy2` and `copytree`) on a disk that is full after
    `count` files written where `where` says: the next one is half written, then ENOSPC."""
    real = shutil.copyfile
    written = 0

    def copyfile(src: Any, dst: Any, *, follow_symlinks: bool = True) -> Any:
        nonlocal written
        if not where(Path(dst)):
            return real(src, dst, follow_symlinks=follow_symlinks)
        written += 1
        if written == count + 1:  # full now; what is removed after frees room again
            Path(dst).write_bytes(Path(src).read_bytes()[:1])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        return real(src, dst, follow_symlinks=follow_symlinks)

    return copyfile


def best_of_rewrite(repo: Path, sink: ListSink, isolation: str = "auto") -> Harness:
    rows = [
        {"attempt": 1, "tool_calls": [{"name": "rewrite_everything", "arguments": {}}]},
        {"attempt": 1, "text": "Done."},
    ]
    return Harness(
        model=ScriptedModelClient.from_responses(rows),
        policy=TerminationPolicy(completion_check=FilesCheck(["done.txt"])),
        strategy=BestOf(n=1, strategy=Ralph(max_iterations=1), isolation=isolation),  # type: ignore[arg-type]
        tools=[rewrite_everything],
        workspace=repo,
        clock=FakeClock(),
        sinks=[sink],
    )


async def test_a_full_disk_while_writing_the_winner_halts_with_the_workspace_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills after 120 of the winner's files: the run halts `WorkspaceUnwritable`
    (``run.halted``), saying the workspace was put back, and it was, exactly."""
    repo = project(tmp_path / "repo")
    before = state_of(repo)
    inside = lambda p: p.is_relative_to(repo) and not p.is_relative_to(repo / ".git")  # noqa: E731
    monkeypatch.setattr(shutil, "copyfile", no_space_after(120, inside))
    sink = ListSink()

    result = await best_of_rewrite(repo, sink).run("Rewrite everything.")

    halt = result.halt_reason
    assert isinstance(halt, WorkspaceUnwritable)
    assert halt.doing == f"write the winner's changes into {repo} (it was put back as it was)"
    assert halt.reason.endswith("No space left on device")
    assert state_of(repo) == before
    assert sink.events[-1].name == "run.halted"
    assert sink.events[-1].reason == halt  # type: ignore[attr-defined]
    assert list((repo / ".git" / "harness-best-of").iterdir()) == []


async def test_an_undo_the_full_disk_stops_too_is_finished_by_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills while the winner is written and stays full, so its undo cannot put
    every file back either: the halt names the files and where their saved copies are, the
    journal is kept, and the next start, with room again, puts the workspace back exactly."""
    repo = project(tmp_path / "repo")
    before = state_of(repo)
    real = shutil.copyfile

    room = 100  # files into src/ before the disk is full, for good

    def full(src: Any, dst: Any, *, follow_symlinks: bool = True) -> Any:
        nonlocal room
        if Path(dst).is_relative_to(repo / "src"):
            if room == 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
            room -= 1
        return real(src, dst, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(shutil, "copyfile", full)
    result = await best_of_rewrite(repo, ListSink()).run("Rewrite everything.")

    halt = result.halt_reason
    assert isinstance(halt, WorkspaceUnwritable)
    assert "files could not be put back (src/f000.py: No space left" in halt.reason
    assert "applying/saved" in halt.reason
    assert state_of(repo) != before  # 100 files of src/ are the winner's still
    assert (repo / "src" / "f000.py").read_text() == "new 0\n"
    assert (repo / "src" / "f150.py").read_text() == "old 150\n"  # never removed on the way
    assert len(list((repo / "src").glob("f*.py"))) == CHANGED
    assert not (repo / "new").exists()
    monkeypatch.setattr(shutil, "copyfile", real)  # room again

    sink = ListSink()
    await next_start(repo, sink).run("Check.")
    [warning] = [e for e in sink.events if isinstance(e, RunWarning)]
    assert "its 400 files were put back as they were" in warning.message
    assert state_of(repo) == before
    assert list((repo / ".git" / "harness-best-of").iterdir()) == []


def test_a_full_disk_while_copying_an_attempts_workspace_is_a_halt_in_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``harness run --json`` of a copy-isolated best-of run whose disk fills while the
    second attempt's copy is made: exit 1, a JSON result with a `WorkspaceUnwritable` halt
    naming the attempt and the system's reason, no traceback, the workspace untouched and
    the copies removed."""
    work = tmp_path / "work"
    work.mkdir()
    for i in range(20):
        (work / f"m{i}.py").write_text(f"m = {i}\n")
    before = state_of(work)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setattr(shutil, "copyfile", no_space_after(25, lambda p: p.is_relative_to(temp)))
    rows = [{"attempt": 1, "text": "Done."}]
    (tmp_path / "script.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f'prompt = "p"\nworkspace = "{work}"\n[model]\ntype = "fixture"\npath = "script.jsonl"\n'
        '[[checks]]\ntype = "files"\npaths = ["done.txt"]\n'
        '[strategy]\ntype = "best_of"\nn = 2\nconcurrency = 1\nisolation = "copy"\n'
        '[strategy.attempt]\ntype = "ralph"\nmax_iterations = 1\n'
    )

    code = main(["run", str(spec), "--json", "-q"])

    out, err = capsys.readouterr()
    assert code == 1, err
    assert "Traceback" not in err
    halt = json.loads(out)["halt"]
    assert halt["type"] == "WorkspaceUnwritable"
    assert halt["doing"] == "make attempt 2's copy"
    assert "No space left on device" in halt["reason"]
    assert state_of(work) == before
    assert list((temp / f"harness-best-of-{os.getuid()}").iterdir()) == []


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs (root only), unmounted after the test."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Write a file on `disk` until it is full; the file."""
    filler = disk / "filler"

    def write_until_full() -> None:
        with filler.open("wb") as out:
            while True:
                out.write(b"\0" * 65536)
                out.flush()

    with pytest.raises(OSError) as full:
        write_until_full()
    assert full.value.errno == errno.ENOSPC
    return filler


async def test_a_really_full_disk_under_a_repository_is_a_halt_with_the_workspace_intact(
    small_disk: Path,
) -> None:
    """The repository sits on a 4 MB tmpfs that is full: best-of cannot make its state
    folder there (nor git the attempts' starting commit or worktree), and the run halts
    `WorkspaceUnwritable` (no traceback), the user's files, branch and index as they were,
    nothing of the run left behind."""
    repo = init_repo(small_disk / "repo", {f"m{i}.py": f"m = {i}\n" * 50 for i in range(20)})
    (repo / "new.py").write_text("uncommitted\n")  # the starting commit must write it
    before, index = state_of(repo), (repo / ".git" / "index").read_bytes()
    filler = fill(small_disk)
    harness = Harness(
        model=ScriptedModelClient.from_responses([]),  # no attempt gets to start
        policy=TerminationPolicy(completion_check=FilesCheck(["done.txt"])),
        strategy=BestOf(n=2, strategy=Ralph(max_iterations=1)),
        workspace=repo,
        clock=FakeClock(),
    )
    result = await harness.run("Rewrite everything.")
    halt = result.halt_reason
    assert isinstance(halt, WorkspaceUnwritable), halt
    assert halt.doing.startswith(
        ("open best-of's state folder", "record the workspace's files", "make attempt")
    )
    assert "No space left on device" in halt.reason
    filler.unlink()
    assert state_of(repo) == before
    assert (repo / ".git" / "index").read_bytes() == index
    assert git(repo, "for-each-ref", "refs/heads/harness-best-of/") == ""
    assert list((repo / ".git" / "harness-best-of").iterdir()) == []
