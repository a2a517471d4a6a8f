"""The stop hook starts git only for what needs it: a stop in a git repository whose spec
protects no paths and keeps no checkpoints starts no git process (every stop of an agent
pays for each one). Counted through a `git` on PATH that logs its calls, then runs the real
one; no time is measured."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from _git_support import git

SPEC = """\
prompt = "Write the report."
{extra}
[[checks]]
type = "command"
command = "{command}"
"""


def _logging_git(folder: Path, log: Path) -> Path:
    """A folder holding a `git` that appends its arguments to `log`, then runs the real git."""
    real = shutil.which("git")
    assert real is not None
    folder.mkdir()
    script = folder / "git"
    script.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {real} "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return folder


def _stop(tmp_path: Path, spec: str) -> tuple[int, list[str]]:
    """Run one Claude Code stop in a git repository; its exit code and the git calls made."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    git(workspace, "init", "-q")
    (workspace / "report.md").write_text("# Report\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "start")
    (tmp_path / "spec.toml").write_text(spec)
    log = tmp_path / "git.log"
    bin_folder = _logging_git(tmp_path / "bin", log)
    payload = {"session_id": "s1", "cwd": str(workspace), "stop_hook_active": False}
    payload["last_assistant_message"] = "Done."
    argv = ["hook", "claude-stop", "--spec", str(tmp_path / "spec.toml")]
    done = subprocess.run(
        [sys.executable, "-m", "strategies", *argv, "--state-dir", str(tmp_path / "state")],
        input=json.dumps(payload),
        env={**os.environ, "PATH": f"{bin_folder}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return done.returncode, calls


def test_a_stop_without_protected_paths_or_checkpoints_starts_no_git_process(
    tmp_path: Path,
) -> None:
    """A passing stop in a git repository, its one check ``true``: no git process at all."""
    code, calls = _stop(tmp_path, SPEC.format(extra="", command="true"))
    assert code == 0
    assert calls == []


def test_a_blocked_stop_that_keeps_checkpoints_does_use_git(tmp_path: Path) -> None:
    """The guard can fail: a blocked stop of a spec with ``checkpoints = true`` checkpoints the
    repository, and the logging git sees those calls."""
    code, calls = _stop(tmp_path, SPEC.format(extra="checkpoints = true\n", command="false"))
    assert code == 0
    assert calls != []
