"""`harness checkpoints list|diff|restore`: what a user sees, on both stores, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from _git_support import init_repo

from harness.checkpoints import Checkpoint, WorkProgress, open_checkpoints
from strategies._cli import main


def saved(workspace: Path, state: Path, label: str, at: float, **kw: object) -> Checkpoint:
    async def go() -> Checkpoint:
        store = await open_checkpoints(workspace, series="run-7", state_dir=state)
        progress = kw.get("progress")
        assert progress is None or isinstance(progress, WorkProgress)
        return await store.save(label, at=at, progress=progress)

    return anyio.run(go)


@pytest.fixture(params=["git", "snapshot"])
def workspace(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    if request.param == "git":
        return init_repo(folder, {"app.py": "v1\n"})
    folder.mkdir()
    (folder / "app.py").write_text("v1\n")
    return folder


def test_list_diff_and_restore_round_trip(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`list` shows each checkpoint with its progress; `diff` names the changed files (exit 1);
    `restore` puts them back and prints the checkpoint of what it replaced."""
    state = ["--state-dir", str(tmp_path / "state")]
    where = ["-w", str(workspace), *state]
    first = saved(workspace, tmp_path / "state", "run started", 0.0)
    (workspace / "app.py").write_text("broken\n")
    (workspace / "extra.py").write_text("x\n")
    progress = WorkProgress(1, 3, "tests", ("test_a", "test_b"))
    second = saved(workspace, tmp_path / "state", "iteration 1 ended", 30.0, progress=progress)

    assert main(["checkpoints", "list", *where]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{first.short_id}  run-7 #0       0.0s  run started")
    assert out[1].endswith("iteration 1 ended  [1 of 3 tests]")

    assert main(["checkpoints", "list", "--json", *where]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == [first.id, second.id]

    assert main(["checkpoints", "diff", first.id[:8], *where]) == 1
    assert capsys.readouterr().out.splitlines() == ["M app.py", "A extra.py"]
    assert main(["checkpoints", "diff", first.id[:8], second.id[:8], *where]) == 1
    capsys.readouterr()

    assert main(["checkpoints", "restore", first.id[:8], *where]) == 0
    said = capsys.readouterr().out
    assert "restored " + first.short_id in said
    assert (workspace / "app.py").read_text() == "v1\n"
    assert not (workspace / "extra.py").exists()
    assert main(["checkpoints", "diff", first.id[:8], *where]) == 0

    # The state the restore replaced is itself a checkpoint: undo the restore.
    safety = said.rsplit("checkpoint ", 1)[1].split()[0]
    assert main(["checkpoints", "restore", safety, *where]) == 0
    capsys.readouterr()
    assert (workspace / "app.py").read_text() == "broken\n"
    assert main(["checkpoints", "list", "--series", "restore", *where]) == 0
    assert "before restoring" in capsys.readouterr().out


def test_errors_name_what_is_wrong(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No such checkpoint, a bad id and a missing workspace exit 2 with the reason."""
    state = ["--state-dir", str(tmp_path / "state")]
    assert main(["checkpoints", "restore", "abcdef12", "-w", str(workspace), *state]) == 2
    assert "no checkpoint 'abcdef12'" in capsys.readouterr().err
    assert main(["checkpoints", "diff", "zz", "-w", str(workspace), *state]) == 2
    assert "not a checkpoint id" in capsys.readouterr().err
    assert main(["checkpoints", "list", "-w", str(tmp_path / "missing"), *state]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["checkpoints", "list", "-w", str(workspace), *state]) == 0
    assert "no checkpoints of" in capsys.readouterr().out


def test_file_names_an_agent_chose_cannot_drive_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A control character in a file name is printed as an escape, not sent to the terminal."""
    ws = tmp_path / "ws"
    ws.mkdir()
    first = saved(ws, tmp_path / "state", "start", 0.0)
    (ws / "evil\x1b[2Jname").write_text("x")
    code = main(
        ["checkpoints", "diff", first.id[:8], "-w", str(ws), "--state-dir", str(tmp_path / "state")]
    )
    assert code == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "evil\\x1b[2Jname" in out
