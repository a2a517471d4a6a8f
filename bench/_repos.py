"""Repositories the benchmarks build: a tree of Python files, and git run inside it."""

from __future__ import annotations

import subprocess
from pathlib import Path


def python_tree(root: Path, files: int) -> None:
    """`files` Python modules of about 4 KB each under ``root/src``, fifty to a package."""
    for i in range(files):
        folder = root / "src" / f"pkg{i // 50}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod_{i % 50}.py").write_text(f"# {i}\n" + "x = 1\n" * 680)


def git(root: Path, *args: str) -> None:
    """Run git in `root` with a throwaway identity; fail on a non-zero exit."""
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@b", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )
