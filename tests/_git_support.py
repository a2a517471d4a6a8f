"""A real git repository for tests: made with the git command line, with a local identity."""

from __future__ import annotations

import subprocess
from pathlib import Path

_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test User",
    "GIT_AUTHOR_EMAIL": "user@example.invalid",
    "GIT_COMMITTER_NAME": "Test User",
    "GIT_COMMITTER_EMAIL": "user@example.invalid",
}


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` and return its stdout; a failure raises with git's own message."""
    import os

    done = subprocess.run(
        ["git", "-c", "commit.gpgSign=false", *args],
        cwd=repo,
        env={**os.environ, **_ENV},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def init_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    """A repository at `path` with `files` committed on `main`."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in (files or {}).items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "--allow-empty", "-m", "initial")
    return path
