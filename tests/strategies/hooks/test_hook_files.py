"""The stop hook, `hook doctor` and `hook install` on their own files planted by another process
(issue 41, point 2): a FIFO, a link to /dev/zero, a folder, a byte that is not UTF-8, JSON nested
200,000 deep. Each command is run as a process, with a time limit: none hangs, none grows
without bound, none prints a traceback.

What each does, as docs/cli-agents.md says:
- the stop hook still answers: the record it cannot append to, or a block count it cannot
  read, is a note on stderr (the count starts again from zero), never a hang; a count it
  cannot write (a folder in its place) cannot bound a chain of blocks, so that stop goes
  (exit 1, the count's path on stderr);
- `hook verdicts` is an error naming the record (exit 2);
- `hook doctor` and `hook install` are an error naming the agent's settings file (exit 2),
  which is left as it is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from strategies._cli._hooks._core import BlockCount

SPEC = '[[checks]]\ntype = "files"\npaths = ["report.md"]\n'
LIMIT = 60  # seconds: a hang fails the test instead of waiting for ever


def fifo(path: Path) -> None:
    os.mkfifo(path)


def dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def folder(path: Path) -> None:
    path.mkdir()


def not_utf8(path: Path) -> None:
    path.write_bytes(b'{"at": 1, "agent": "\xff"}\n')


def deep(path: Path) -> None:
    path.write_text("[" * 200_000 + "]" * 200_000)


PLANTED: dict[str, Callable[[Path], None]] = {
    "fifo": fifo,
    "dev-zero": dev_zero,
    "folder": folder,
    "not-utf8": not_utf8,
    "deep": deep,
}


def harness(*argv: str, cwd: Path, stdin: str = "", home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / "state")}
    return subprocess.run(
        [sys.executable, "-m", "strategies", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=LIMIT,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / ".git").mkdir()
    (folder / "checks.toml").write_text(SPEC)
    return folder


@pytest.mark.parametrize("kind", PLANTED)
def test_the_hook_answers_whatever_its_record_and_count_are(
    kind: str, project: Path, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    PLANTED[kind](state / "verdicts.jsonl")
    PLANTED[kind](BlockCount(state, "claude", "s1").path)
    payload = {"session_id": "s1", "cwd": str(project), "hook_event_name": "Stop"}
    argv = ["hook", "claude-stop", "--spec", "checks.toml", "--state-dir", str(state)]
    ran = harness(*argv, cwd=project, stdin=json.dumps(payload), home=tmp_path)
    assert "Traceback" not in ran.stderr
    if kind == "folder":  # a count that cannot be kept cannot bound a chain: the stop goes
        assert ran.returncode == 1
        assert str(BlockCount(state, "claude", "s1").path) in ran.stderr
    else:
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout)["decision"] == "block"
    listed = harness("hook", "verdicts", "--state-dir", str(state), cwd=project, home=tmp_path)
    if kind == "deep":  # a record line too deep to be a verdict
        assert listed.returncode == 2
    elif kind != "not-utf8" or listed.returncode != 0:
        assert listed.returncode == 2, listed.stdout
        assert "verdicts.jsonl" in listed.stderr
    assert "Traceback" not in listed.stderr


@pytest.mark.parametrize("kind", PLANTED)
def test_doctor_and_install_name_an_unreadable_settings_file(
    kind: str, project: Path, tmp_path: Path
) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    PLANTED[kind](settings)
    doctor = harness("hook", "doctor", "--agent", "claude", cwd=project, home=tmp_path)
    assert doctor.returncode == 2, doctor.stdout
    assert str(settings) in doctor.stderr
    assert "Traceback" not in doctor.stderr
    argv = ["hook", "install", "--agent", "claude", "--spec", "checks.toml"]
    install = harness(*argv, cwd=project, home=tmp_path)
    if kind == "not-utf8":  # JSON, but not the agent's: still never overwritten
        assert install.returncode == 2
    else:
        assert install.returncode == 2, install.stdout
        assert str(settings) in install.stderr
    assert "Traceback" not in install.stderr
    if kind == "fifo":
        assert settings.is_fifo()
    elif kind == "dev-zero":
        assert settings.is_symlink()
