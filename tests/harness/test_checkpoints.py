"""Checkpoint stores: git commits on private refs that leave the user's repository alone, and
content-addressed snapshots elsewhere; both save, list, compare and restore a workspace."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _git_support import git, init_repo

from harness.checkpoints import (
    REF_PREFIX,
    CheckpointError,
    CheckpointStore,
    GitCheckpoints,
    NoSuchCheckpoint,
    NotAWorkspace,
    SnapshotCheckpoints,
    WorkProgress,
    open_checkpoints,
)
from harness.testing import FakeClock

pytestmark = pytest.mark.anyio


def tree_of(folder: Path) -> dict[str, str]:
    """Every file under `folder` (outside .git) as path -> content; links as '-> target'."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if relative.split("/")[0] == ".git":
            continue
        if path.is_symlink():
            found[relative] = f"-> {os.readlink(path)}"
        elif path.is_file():
            found[relative] = path.read_text()
    return found


@pytest.fixture(params=["git", "snapshot"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def prepare(workspace: Path, backend: str) -> None:
    """A workspace with README.md: a git repository with it committed, or a plain folder."""
    if backend == "git":
        init_repo(workspace, {"README.md": "hello\n"})
    else:
        workspace.mkdir(exist_ok=True)
        (workspace / "README.md").write_text("hello\n")


def append(path: Path, text: str) -> None:
    with open(path, "a") as file:
        file.write(text)


async def store_in(workspace: Path, backend: str, state: Path) -> CheckpointStore:
    prepare(workspace, backend)
    return await open_checkpoints(
        workspace, series="run-1", clock=FakeClock(), backend="auto", state_dir=state
    )


async def test_a_restore_puts_back_every_file_and_removes_files_made_since(
    tmp_path: Path, backend: str
) -> None:
    """Modified, deleted and created files (and the folders they made) are as at the checkpoint."""
    ws = tmp_path / "ws"
    store = await store_in(ws, backend, tmp_path / "state")
    assert store.kind == backend
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("v1\n")
    (ws / "tool.sh").write_text("#!/bin/sh\n")
    os.chmod(ws / "tool.sh", 0o755)
    before = tree_of(ws)
    saved = await store.save("start", at=0.0)

    (ws / "src" / "app.py").write_text("broken\n")
    (ws / "README.md").unlink()
    (ws / "new" / "deep").mkdir(parents=True)
    (ws / "new" / "deep" / "junk.txt").write_text("junk")
    os.chmod(ws / "tool.sh", 0o644)

    changes = await store.restore(saved)
    assert tree_of(ws) == before
    assert not (ws / "new").exists()
    assert os.stat(ws / "tool.sh").st_mode & 0o111
    assert changes.added == ("README.md",)
    assert changes.deleted == ("new/deep/junk.txt",)
    assert set(changes.modified) == {"src/app.py", "tool.sh"}
    assert (await store.diff(saved)).empty


async def test_checkpoints_chain_in_a_series_and_are_found_by_a_prefix(
    tmp_path: Path, backend: str
) -> None:
    """Each save's parent is the one before; ids are found by 4+ hex digits; progress is kept."""
    ws = tmp_path / "ws"
    store = await store_in(ws, backend, tmp_path / "state")
    first = await store.save("run started", at=0.0)
    (ws / "a.txt").write_text("a")
    progress = WorkProgress(2, 3, "tests", ("test_x",))
    second = await store.save("iteration 1\nended", at=12.5, progress=progress)
    assert (first.seq, second.seq) == (0, 1)
    assert second.parent == first.id
    assert first.parent is None
    assert second.label == "iteration 1 ended"
    listed = await store.checkpoints()
    assert listed == [first, second]
    assert await store.checkpoints("run-1") == [first, second]
    assert await store.checkpoints("other") == []
    assert await store.find(second.id[:6].upper()) == second
    assert (await store.find(first.id)).progress is None
    assert listed[1].progress == progress
    assert listed[1].at == 12.5
    assert (await store.diff(first, second)).lines() == ["A a.txt"]
    with pytest.raises(NoSuchCheckpoint, match="no checkpoint 'ffff0000'"):
        await store.find("ffff0000")
    with pytest.raises(NoSuchCheckpoint, match="not a checkpoint id"):
        await store.find("xyz")


async def test_a_new_store_continues_its_series(tmp_path: Path, backend: str) -> None:
    """A second store of the same series (a later process) appends after the last checkpoint."""
    ws = tmp_path / "ws"
    store = await store_in(ws, backend, tmp_path / "state")
    first = await store.save("one", at=0.0)
    again = await open_checkpoints(ws, series="run-1", state_dir=tmp_path / "state")
    (ws / "b.txt").write_text("b")
    second = await again.save("two", at=1.0)
    assert (second.seq, second.parent) == (1, first.id)


async def test_the_same_work_gives_the_same_ids(tmp_path: Path, backend: str) -> None:
    """Ids depend on the content, the place in the series, the label, the time and the
    progress, not on the run's random id: a replay reproduces them."""
    ids = []
    for name in ("one", "two"):
        ws = tmp_path / name
        store = await store_in(ws, backend, tmp_path / f"state-{name}")
        store = await open_checkpoints(
            ws, series=f"series-{name}", state_dir=tmp_path / f"state-{name}"
        )
        (ws / "f.txt").write_text("same")
        first = await store.save("start", at=0.0)
        second = await store.save("next", at=3.0, progress=WorkProgress(1, 2, "tests"))
        ids.append((first.id, first.tree, second.id))
    assert ids[0] == ids[1]


async def test_links_are_kept_as_links_and_never_followed(tmp_path: Path, backend: str) -> None:
    """A link is restored as a link; a folder swapped for a link to outside the workspace is
    replaced by a real folder, and nothing outside is written or removed."""
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("outside")
    store = await store_in(ws, backend, tmp_path / "state")
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("inside")
    os.symlink("d/f.txt", ws / "alias")
    saved = await store.save("start", at=0.0)

    for path in (ws / "d" / "f.txt", ws / "alias"):
        path.unlink()
    (ws / "d").rmdir()
    os.symlink(outside, ws / "d")
    await store.restore(saved)
    assert not (ws / "d").is_symlink()
    assert (ws / "d" / "f.txt").read_text() == "inside"
    assert os.readlink(ws / "alias") == "d/f.txt"
    assert tree_of(outside) == {"keep.txt": "outside"}
    assert not (outside / "f.txt").exists()


async def test_an_empty_workspace_is_a_checkpoint_too(tmp_path: Path, backend: str) -> None:
    """Restoring the empty state removes everything the agent made."""
    ws = tmp_path / "ws"
    store = await store_in(ws, backend, tmp_path / "state")
    (ws / "README.md").unlink()
    empty = await store.save("empty", at=0.0)
    (ws / "x" / "y").mkdir(parents=True)
    (ws / "x" / "y" / "z.txt").write_text("z")
    await store.restore(empty)
    assert tree_of(ws) == {}


async def test_clear_errors_for_a_folder_that_is_not_a_workspace(tmp_path: Path) -> None:
    """A missing folder, a file, a bad series and git where there is none are named."""
    with pytest.raises(NotAWorkspace, match="does not exist"):
        await open_checkpoints(tmp_path / "nope", series="s")
    (tmp_path / "file").write_text("")
    with pytest.raises(NotAWorkspace, match="is not a folder"):
        await open_checkpoints(tmp_path / "file", series="s")
    with pytest.raises(CheckpointError, match="series"):
        await open_checkpoints(tmp_path, series="../up")
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(CheckpointError, match="not inside a git work tree"):
        await open_checkpoints(plain, series="s", backend="git")
    store = await open_checkpoints(plain, series="s", state_dir=tmp_path / "state")
    assert isinstance(store, SnapshotCheckpoints)


# -- git: the user's repository is left alone ---------------------------------------------


async def test_git_checkpoints_never_touch_head_branch_index_stash_hooks_or_config(
    tmp_path: Path,
) -> None:
    """Saving and restoring leave HEAD, the branch, the index (byte for byte), the stash and
    the config as they were, and run no hook."""
    repo = init_repo(tmp_path / "repo", {"a.txt": "one\n", "b.txt": "bee\n"})
    (repo / "a.txt").write_text("stashed\n")
    git(repo, "stash", "-q")
    (repo / "b.txt").write_text("staged\n")
    git(repo, "add", "b.txt")
    (repo / "a.txt").write_text("unstaged\n")
    marker = tmp_path / "hook-ran"
    for hook in ("pre-commit", "post-commit", "reference-transaction", "post-index-change"):
        script = repo / ".git" / "hooks" / hook
        script.write_text(f"#!/bin/sh\necho {hook} >> {marker}\n")
        script.chmod(0o755)

    def user_state() -> tuple[str, ...]:
        return (
            git(repo, "rev-parse", "HEAD"),
            git(repo, "symbolic-ref", "HEAD"),
            git(repo, "stash", "list", "--format=%H"),
            git(repo, "diff", "--cached"),
            (repo / ".git" / "index").read_bytes().hex(),
            (repo / ".git" / "config").read_text(),
            git(repo, "for-each-ref", "refs/heads", "refs/tags", "refs/stash"),
        )

    before = user_state()
    store = await open_checkpoints(repo, series="run-1", clock=FakeClock())
    assert isinstance(store, GitCheckpoints)
    saved = await store.save("start", at=0.0)
    (repo / "a.txt").write_text("agent broke it\n")
    (repo / "c.txt").write_text("new\n")
    await store.save("iteration 1", at=5.0)
    await store.restore(saved)
    await store.aclose()

    assert user_state() == before
    assert not marker.exists()
    assert (repo / "a.txt").read_text() == "unstaged\n"
    assert (repo / "b.txt").read_text() == "staged\n"
    assert not (repo / "c.txt").exists()
    assert git(repo, "for-each-ref", "--format=%(refname)", REF_PREFIX) == REF_PREFIX + "run-1\n"


async def test_git_checkpoints_are_commits_with_a_fixed_identity_and_the_runs_time(
    tmp_path: Path,
) -> None:
    """The commit's tree is the workspace; author and committer are the harness's; the date is
    the run's clock; the message carries the label and the progress."""
    repo = init_repo(tmp_path / "repo", {"a.txt": "one\n"})
    store = await open_checkpoints(repo, series="run-1")
    saved = await store.save("iteration 2 ended", at=42.9, progress=WorkProgress(1, 2, "tests"))
    shown = git(repo, "show", "-s", "--format=%an <%ae>|%cn|%at|%ct|%T|%s", saved.id)
    assert shown.strip() == (
        "completion-harness <checkpoints@completion-harness.invalid>|completion-harness|42|42|"
        f"{saved.tree}|iteration 2 ended"
    )
    assert git(repo, "rev-parse", "HEAD^{tree}").strip() == saved.tree
    body = git(repo, "show", "-s", "--format=%B", saved.id)
    meta = json.loads(body.split("harness-checkpoint: ", 1)[1])
    assert meta["progress"] == {"done": 1, "total": 2, "unit": "tests", "failing": []}


async def test_git_checkpoints_honour_gitignore_and_keep_tracked_ignored_files(
    tmp_path: Path,
) -> None:
    """Ignored files are not saved and survive a restore; a tracked file that matches an
    ignore rule is still saved and restored."""
    repo = init_repo(tmp_path / "repo", {".gitignore": "*.log\nbuild/\n"})
    (repo / "kept.log").write_text("tracked anyway\n")
    git(repo, "add", "-f", "kept.log")
    git(repo, "commit", "-q", "-m", "track a log")
    store = await open_checkpoints(repo, series="run-1")
    saved = await store.save("start", at=0.0)
    (repo / "kept.log").write_text("changed\n")
    (repo / "debug.log").write_text("ignored\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_text("ignored\n")
    assert (await store.diff(saved)).lines() == ["M kept.log"]
    await store.restore(saved)
    assert (repo / "kept.log").read_text() == "tracked anyway\n"
    assert (repo / "debug.log").read_text() == "ignored\n"
    assert (repo / "build" / "out.bin").exists()


async def test_a_workspace_below_the_top_of_a_repository_is_checkpointed_alone(
    tmp_path: Path,
) -> None:
    """Only the workspace's folder is saved and restored; the rest of the work tree is not
    touched, even when it changed since."""
    repo = init_repo(tmp_path / "repo", {"top.txt": "top\n", "pkg/mod.py": "v1\n"})
    store = await open_checkpoints(repo / "pkg", series="run-1")
    saved = await store.save("start", at=0.0)
    assert git(repo, "ls-tree", "--name-only", saved.tree).split() == ["mod.py"]
    (repo / "top.txt").write_text("the user's own edit\n")
    (repo / "pkg" / "mod.py").write_text("broken\n")
    (repo / "pkg" / "extra.py").write_text("x\n")
    assert (await store.diff(saved)).lines() == ["A extra.py", "M mod.py"]
    await store.restore(saved)
    assert (repo / "pkg" / "mod.py").read_text() == "v1\n"
    assert not (repo / "pkg" / "extra.py").exists()
    assert (repo / "top.txt").read_text() == "the user's own edit\n"
    (repo / "pkg" / "mod.py").unlink()
    empty = await store.save("empty", at=1.0)
    assert git(repo, "ls-tree", empty.tree) == ""


# -- snapshots ----------------------------------------------------------------------------


async def test_snapshots_store_each_content_once_and_skip_caches(tmp_path: Path) -> None:
    """Two checkpoints of the same files share their blobs and tree; cache folders are
    neither saved nor removed by a restore; the state folder inside the workspace is skipped."""
    ws = tmp_path / "ws"
    ws.mkdir()
    state = ws / ".state"
    (ws / "a.txt").write_text("same")
    (ws / "b.txt").write_text("same")
    store = await open_checkpoints(ws, series="s", backend="snapshot", state_dir=state)
    first = await store.save("one", at=0.0)
    second = await store.save("two", at=1.0)
    assert first.tree == second.tree
    assert first.id != second.id
    blobs = [p for p in (state / "blobs").rglob("*") if p.is_file()]
    assert len(blobs) == 1
    (ws / "__pycache__").mkdir()
    (ws / "__pycache__" / "x.pyc").write_text("cache")
    (ws / "node_modules" / "dep").mkdir(parents=True)
    assert (await store.diff(first)).empty
    await store.restore(first)
    assert (ws / "__pycache__" / "x.pyc").exists()
    assert (ws / "node_modules" / "dep").is_dir()


async def test_a_snapshot_with_missing_content_is_refused_before_anything_changes(
    tmp_path: Path,
) -> None:
    """A blob removed from the store makes the restore fail and leaves the workspace as is."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("original")
    state = tmp_path / "state"
    store = await open_checkpoints(ws, series="s", backend="snapshot", state_dir=state)
    saved = await store.save("start", at=0.0)
    for blob in (state / "blobs").rglob("*"):
        if blob.is_file():
            blob.unlink()
    (ws / "a.txt").write_text("changed")
    with pytest.raises(NoSuchCheckpoint, match="incomplete"):
        await store.restore(saved)
    assert (ws / "a.txt").read_text() == "changed"


async def test_an_altered_blob_is_refused_before_anything_changes(tmp_path: Path) -> None:
    """The store is content-addressed by sha256: a blob whose bytes no longer hash to its
    name (bit rot, a hand edit, an agent that found the state folder) fails the restore with
    a CheckpointError naming it, and no file of the workspace is touched."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("original")
    (ws / "b.txt").write_text("kept")
    state = tmp_path / "state"
    store = await open_checkpoints(ws, series="s", backend="snapshot", state_dir=state)
    saved = await store.save("start", at=0.0)
    blobs = [b for b in (state / "blobs").rglob("*") if b.is_file()]
    altered = next(b for b in blobs if b.read_bytes() == b"original")
    altered.write_bytes(b"tampered")
    (ws / "a.txt").write_text("changed")
    (ws / "b.txt").unlink()
    with pytest.raises(CheckpointError, match="corrupt") as raised:
        await store.restore(saved)
    assert altered.name in str(raised.value)
    assert (ws / "a.txt").read_text() == "changed"
    assert not (ws / "b.txt").exists()


async def test_an_os_error_of_the_store_is_a_checkpoint_error(tmp_path: Path) -> None:
    """The docs promise CheckpointError: a state folder that cannot be written (here it lies
    under a file) is one, naming the cause, not a bare OSError."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("x")
    (tmp_path / "file").write_text("not a folder")
    store = await open_checkpoints(
        ws, series="s", backend="snapshot", state_dir=tmp_path / "file" / "state"
    )
    with pytest.raises(CheckpointError, match="Not a directory"):
        await store.save("start", at=0.0)


async def test_a_torn_last_record_is_ignored_and_a_bad_one_named(tmp_path: Path) -> None:
    """A save cut short leaves a partial last line, which is skipped; a bad line elsewhere is
    an error naming the file and line."""
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"
    store = await open_checkpoints(ws, series="s", backend="snapshot", state_dir=state)
    saved = await store.save("start", at=0.0)
    series = state / "series" / "s.jsonl"
    append(series, '{"id": "abc')
    assert await store.checkpoints() == [saved]
    series.write_text("not json\n" + series.read_text())
    with pytest.raises(CheckpointError, match=r"s\.jsonl:1: not a checkpoint record"):
        await store.checkpoints()
