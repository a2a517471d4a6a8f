"""How deep the workspace tools go, and removing a temporary workspace whatever is in it: a tree
thousands of folders deep, folders without permissions, files that vanish meanwhile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import ToolCall, ToolContext, WorkspaceTooDeep, write_file
from harness._fs._workspace import MAX_DEPTH
from harness.extend import SessionStore, remove_tree
from harness.testing import FakeClock

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 120

# Makes a chain of folders DEPTH deep under the current folder, by descriptor (a path that
# long could not be named whole), a file at each level.
DEEP_TREE = """
import os, sys
fd = os.open(".", os.O_RDONLY)
for _ in range(int(sys.argv[1])):
    os.mkdir("deepdeep", dir_fd=fd)
    below = os.open("deepdeep", os.O_RDONLY, dir_fd=fd)
    os.close(os.open("f", os.O_CREAT | os.O_WRONLY, dir_fd=below))
    os.close(fd)
    fd = below
"""


def _deep_tree(where: Path, depth: int) -> None:
    subprocess.run([sys.executable, "-c", DEEP_TREE, str(depth)], cwd=where, check=True)


def _write(workspace: Path, path: str) -> str:
    call = ToolCall("c1", "write_file", {})
    ctx = ToolContext(workspace, SessionStore(), FakeClock(), call, "builder")
    return str(write_file.fn(path=path, content="x", ctx=ctx))


def test_the_write_tool_makes_folders_up_to_the_documented_depth(tmp_path: Path) -> None:
    """MAX_DEPTH folders deep is fine; one more is refused, naming the limit, and nothing of
    the refused path's deepest folder is made."""
    fits = "/".join(["d"] * MAX_DEPTH) + "/f.txt"
    assert _write(tmp_path, fits) == f"wrote 1 bytes to {fits}"
    too_deep = "/".join(["e"] * (MAX_DEPTH + 1)) + "/f.txt"
    with pytest.raises(WorkspaceTooDeep) as caught:
        _write(tmp_path, too_deep)
    assert str(caught.value) == (
        f"path {too_deep!r} would make a folder {MAX_DEPTH + 1} levels deep; the workspace "
        f"allows at most {MAX_DEPTH}"
    )
    assert not (tmp_path.joinpath(*["e"] * (MAX_DEPTH + 1))).exists()


def test_a_link_inside_the_workspace_does_not_lift_the_limit(tmp_path: Path) -> None:
    """The depth counted is the real one: through a link to a deep folder, the folders made
    below it count from the workspace's root."""
    deep = tmp_path.joinpath(*["d"] * (MAX_DEPTH - 1))
    deep.mkdir(parents=True)
    (tmp_path / "link").symlink_to(deep)
    assert _write(tmp_path, "link/a/f.txt") == "wrote 1 bytes to link/a/f.txt"
    with pytest.raises(WorkspaceTooDeep, match=f"would make a folder {MAX_DEPTH + 1} levels"):
        _write(tmp_path, "link/a/b/f.txt")


def test_remove_tree_removes_a_tree_deeper_than_any_recursion(tmp_path: Path) -> None:
    """1,200 folders deep (shutil.rmtree fails with RecursionError; a path that long is
    longer than the system takes): all of it goes."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _deep_tree(workspace, 1200)
    assert remove_tree(workspace) == []
    assert not workspace.exists()


def test_remove_tree_opens_up_folders_without_permissions(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "locked" / "inner").mkdir(parents=True)
    (workspace / "locked" / "inner" / "file").write_text("x")
    (workspace / "locked" / "inner").chmod(0o500)  # no writing: its file cannot be unlinked
    (workspace / "locked").chmod(0o000)  # no reading, no entering
    assert remove_tree(workspace) == []
    assert not workspace.exists()


def test_remove_tree_takes_files_vanishing_meanwhile_in_its_stride(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each file is removed by someone else just before remove_tree gets to it (the agent's
    last process still cleaning up): no error, and the tree is gone."""
    workspace = tmp_path / "ws"
    (workspace / "a" / "b").mkdir(parents=True)
    for name in ("x", "a/y", "a/b/z"):
        (workspace / name).write_text(name)
    real_unlink = os.unlink

    def racing_unlink(name: str, *, dir_fd: int | None = None) -> None:
        real_unlink(name, dir_fd=dir_fd)  # someone else got there first
        real_unlink(name, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", racing_unlink)
    assert remove_tree(workspace) == []
    assert not workspace.exists()


def test_remove_tree_of_nothing_or_a_file(tmp_path: Path) -> None:
    assert remove_tree(tmp_path / "missing") == []
    (tmp_path / "file").write_text("x")
    assert remove_tree(tmp_path / "file") == []
    assert not (tmp_path / "file").exists()


def test_harness_run_removes_a_temporary_workspace_a_thousand_folders_deep(
    tmp_path: Path,
) -> None:
    """The real command: the run's check leaves a tree 1,200 folders deep in the temporary
    copy of the template; the copy is removed, the run's outcome and exit code are kept, and
    nothing crashes."""
    (tmp_path / "template").mkdir()
    (tmp_path / "deep.py").write_text(DEEP_TREE)
    (tmp_path / "script.jsonl").write_text('{"text": "done"}\n')
    check = json.dumps([sys.executable, str(tmp_path / "deep.py"), "1200"])
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'prompt = "work"\nworkspace_template = "template"\n'
        '[model]\ntype = "fixture"\npath = "script.jsonl"\n'
        f'[[checks]]\ntype = "command"\ncommand = {check}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "strategies", "run", str(spec), "--json"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["verified"] is True
    assert outcome["workspace_removed"] is True
    assert not Path(outcome["workspace"]).exists()
