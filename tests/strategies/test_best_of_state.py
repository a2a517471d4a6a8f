"""Best-of's own folders, tried from outside: a link or another user's folder where its state
belongs is refused in one line with nothing outside touched, and a sweep removes only the
folders the harness marked as its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _git_support import git, init_repo

from harness.extend import FolderRefused, owned_folder, private_folder, remove_owned

SPEC = """
prompt = "Write done.txt."
workspace = "{workspace}"

[model]
type = "fixture"
path = "script.jsonl"

[tools]
names = ["write_file"]

[[checks]]
type = "files"
paths = ["done.txt"]

[strategy]
type = "best_of"
n = 1
isolation = "{isolation}"
"""

WRITE = {"name": "write_file", "arguments": {"path": "done.txt", "content": "done\n"}}
SCRIPT = [{"attempt": 1, "tool_calls": [WRITE]}, {"attempt": 1, "text": "Done."}]


def harness_run(
    tmp_path: Path, workspace: Path, isolation: str
) -> subprocess.CompletedProcess[str]:
    """``harness run`` of a best-of spec on `workspace`, as a process, with `tmp_path/tmp` as
    its TMPDIR."""
    (tmp_path / "script.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SCRIPT))
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(workspace=workspace, isolation=isolation))
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    return subprocess.run(
        [sys.executable, "-m", "strategies", "run", str(spec), "--json", "-q"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def tree(folder: Path) -> dict[str, str]:
    """Every entry under `folder` (not following links) with what it is or holds."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found[rel] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            found[rel] = "/"
        else:
            found[rel] = path.read_text()
    return found


def victim(tmp_path: Path) -> Path:
    """A folder of someone's with sub-folders a sweep would have deleted."""
    folder = tmp_path / "victim"
    for name in ("abc123", "keep/deep", "0f0f0f"):
        (folder / name).mkdir(parents=True)
        (folder / name / "note.txt").write_text(f"{name}\n")
    (folder / "abc123.lock").write_text("1\n")
    return folder


def test_a_link_planted_at_the_repositorys_state_folder_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    """``.git/harness-best-of`` is a link to a folder elsewhere: the run stops with exit 2 and
    one line naming the folder, the linked folder's sub-folders are all still there, nothing
    is written into it, and the workspace is untouched."""
    repo = init_repo(tmp_path / "repo", {"calc.py": "x = 1\n"})
    outside = victim(tmp_path)
    before = tree(outside)
    (repo / ".git" / "harness-best-of").symlink_to(outside)

    done = harness_run(tmp_path, repo, "auto")

    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "harness-best-of: is a symbolic link" in done.stderr
    assert "Traceback" not in done.stderr
    assert tree(outside) == before
    assert not (repo / "done.txt").exists()
    assert git(repo, "for-each-ref", "refs/heads/harness-best-of/") == ""


def test_a_link_another_user_planted_in_the_temp_folder_gets_no_copy_of_the_work(
    tmp_path: Path,
) -> None:
    """On a shared temp folder, ``harness-best-of-<uid>`` is a link to a folder of another
    user's: the copy-isolated run refuses it in one line, writes none of the workspace's
    files there and deletes none of its sub-folders."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "secret.py").write_text("KEY = 'the user's code'\n")
    outside = victim(tmp_path)
    before = tree(outside)
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / f"harness-best-of-{os.getuid()}").symlink_to(outside)

    done = harness_run(tmp_path, work, "copy")

    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"harness-best-of-{os.getuid()}: is a symbolic link" in done.stderr
    assert tree(outside) == before
    assert not any(p.name == "secret.py" for p in outside.rglob("*"))


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_temp_state_folder_another_user_owns_is_refused_in_one_line(tmp_path: Path) -> None:
    """``harness-best-of-<uid>`` exists as a real folder, but another user's: refused, one
    line, and nothing is written or removed in it."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.py").write_text("a = 1\n")
    (tmp_path / "tmp").mkdir()
    theirs = tmp_path / "tmp" / f"harness-best-of-{os.getuid()}"
    (theirs / "abc123").mkdir(parents=True)
    os.chown(theirs, 4242, 4242)
    os.chmod(theirs, 0o777)

    done = harness_run(tmp_path, work, "copy")

    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "owned by another user (uid 4242)" in done.stderr
    assert sorted(p.name for p in theirs.iterdir()) == ["abc123"]


def test_a_sweep_removes_only_folders_that_carry_the_harnesss_mark(tmp_path: Path) -> None:
    """A dead run's folder that the harness made is swept; a folder of the same shape that it
    did not make (no mark) stays, and so does what a link inside the state folder points at."""
    repo = init_repo(tmp_path / "repo", {"calc.py": "x = 1\n"})
    state = repo / ".git" / "harness-best-of"
    state.mkdir()
    (state / "deadbeef").mkdir()
    (state / "deadbeef" / "notes.txt").write_text("mine, not the harness's\n")
    outside = victim(tmp_path)
    (state / "cafe01").symlink_to(outside)
    owned_folder(state / "f00d42")
    (state / "f00d42" / "1").mkdir()

    done = harness_run(tmp_path, repo, "auto")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verified"] is True
    assert (state / "deadbeef" / "notes.txt").exists()
    assert (outside / "abc123" / "note.txt").exists()
    assert not (state / "f00d42").exists()
    assert (repo / "done.txt").read_text() == "done\n"


def test_private_folder_makes_a_private_folder_and_tightens_a_loose_one(tmp_path: Path) -> None:
    made = private_folder(tmp_path / "state")
    assert (made.stat().st_mode & 0o777) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    private_folder(loose)
    assert (loose.stat().st_mode & 0o777) == 0o700
    (tmp_path / "file").write_text("x")
    with pytest.raises(FolderRefused, match="is not a folder"):
        private_folder(tmp_path / "file")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(FolderRefused, match="is a symbolic link"):
        private_folder(tmp_path / "dangling")
    assert not (tmp_path / "nowhere").exists()


def test_remove_owned_never_removes_an_unmarked_folder_or_follows_a_link(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert remove_owned(plain) is False
    assert plain.exists()
    marked = owned_folder(tmp_path / "marked")
    (tmp_path / "link").symlink_to(marked)
    assert remove_owned(tmp_path / "link") is False
    assert marked.exists()
    assert remove_owned(marked) is True
    assert not marked.exists()
    with pytest.raises(FolderRefused, match="was not made by the harness"):
        owned_folder(plain)


NOT_WORK_COMMAND = (
    "{python} -m pytest -q test_calc.py; mkdir -p pkg/__pycache__ .venv/lib node_modules/x && "
    "echo x > pkg/__pycache__/m.cpython-311.pyc && echo x > .venv/lib/site.py && "
    "echo x > node_modules/x/index.js && echo x > .hypothesis/db 2>/dev/null; true"
)


@pytest.mark.anyio
@pytest.mark.parametrize("isolation", ["copy", "worktree"])
async def test_an_attempt_that_ran_pytest_lists_no_cache_file_and_applies_none(
    tmp_path: Path, isolation: str
) -> None:
    """An attempt runs pytest (which leaves ``.pytest_cache``) and leaves ``__pycache__``,
    ``.venv`` and ``node_modules`` files beside its fix: its changed files are the fix alone,
    and only the fix reaches the workspace."""
    from checks import FilesCheck
    from harness import Harness, ScriptedModelClient, run_command_tool, workspace_tools
    from harness.testing import FakeClock
    from strategies import BestOf, Ralph
    from termination import TerminationPolicy

    files = {"calc.py": "x = 1\n", "test_calc.py": "def test_x():\n    assert True\n"}
    if isolation == "worktree":
        work = init_repo(tmp_path / "work", files)
    else:
        work = tmp_path / "work"
        work.mkdir()
        for name, text in files.items():
            (work / name).write_text(text)
    command = NOT_WORK_COMMAND.format(python=sys.executable)
    run = {"name": "run_command", "arguments": {"command": command}}
    rows = [
        {"attempt": 1, "tool_calls": [run, WRITE]},
        {"attempt": 1, "text": "Done."},
    ]
    harness = Harness(
        model=ScriptedModelClient.from_responses(rows),
        policy=TerminationPolicy(completion_check=FilesCheck(["done.txt"])),
        strategy=BestOf(n=1, strategy=Ralph(max_iterations=1), isolation=isolation),  # type: ignore[arg-type]
        tools=[*workspace_tools(), run_command_tool()],
        workspace=work,
        clock=FakeClock(),
    )
    result = await harness.run("Write done.txt.")
    assert result.verified
    [attempt] = result.attempts
    ran = attempt.result.sessions[0].messages if attempt.result else ()
    assert "1 passed" in str(ran)  # pytest ran in the attempt's workspace
    assert attempt.changed == ("done.txt",)
    names = {p.name for p in work.rglob("*")}
    assert not names & {".pytest_cache", "__pycache__", ".venv", "node_modules"}


@pytest.mark.anyio
@pytest.mark.parametrize("checkpoints", [True, False])
async def test_attempts_checkpoint_as_the_run_is_told_to(tmp_path: Path, checkpoints: bool) -> None:
    """``Harness(checkpoints=True)`` reaches each attempt (its start is checkpointed, in its
    own workspace); without it and without rollback, an attempt checkpoints nothing."""
    from checks import FilesCheck
    from harness import Harness, ScriptedModelClient, workspace_tools
    from harness.events import AttemptEvent
    from harness.testing import FakeClock, ListSink
    from strategies import BestOf, Ralph
    from termination import TerminationPolicy

    work = tmp_path / "work"
    work.mkdir()
    (work / "a.py").write_text("a = 1\n")
    sink = ListSink()
    harness = Harness(
        model=ScriptedModelClient.from_responses(SCRIPT),
        policy=TerminationPolicy(completion_check=FilesCheck(["done.txt"])),
        strategy=BestOf(n=1, strategy=Ralph(max_iterations=1)),
        tools=workspace_tools(),
        workspace=work,
        clock=FakeClock(),
        sinks=[sink],
        checkpoints=checkpoints,
    )
    result = await harness.run("Write done.txt.")
    assert result.verified
    inner = [e.inner.name for e in sink.events if isinstance(e, AttemptEvent)]
    assert ("checkpoint.saved" in inner) is checkpoints
