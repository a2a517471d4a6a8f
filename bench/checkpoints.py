"""What a checkpoint costs: saving the workspace and restoring it, in git and as a snapshot.

    python bench/checkpoints.py            # 2,000 files of 4 KB each
    python bench/checkpoints.py --quick    # 200

F: the first save of a run (git: HEAD's tree read into the private index, every file hashed;
   snapshot: every file hashed and stored).
S: a later save after 10 files changed (what a Ralph iteration or a rejected claim pays).
R: restoring the first checkpoint after those 10 changes and 10 new files.
Medians of 5 rounds, in ms. Every git command runs under the process supervisor, as in a run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Literal

import anyio
from _repos import git as _git
from _repos import python_tree as _tree

from harness.checkpoints import open_checkpoints

Backend = Literal["git", "snapshot"]


def _change(root: Path, round_: int) -> None:
    for i in range(10):
        (root / "src" / "pkg0" / f"mod_{i}.py").write_text(f"changed {round_}\n")
        (root / "src" / f"new_{round_}_{i}.py").write_text("new\n")


async def _round(backend: Backend, files: int, round_: int) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "ws"
        root.mkdir()
        _tree(root, files)
        if backend == "git":
            _git(root, "init", "-q")
            _git(root, "add", "-A")
            _git(root, "commit", "-q", "-m", "base")
        store = await open_checkpoints(
            root, series=f"bench-{round_}", backend=backend, state_dir=Path(folder) / "state"
        )
        started = time.perf_counter()
        first = await store.save("start", at=0.0)
        saved_first = time.perf_counter() - started
        _change(root, round_)
        started = time.perf_counter()
        await store.save("later", at=1.0)
        saved_later = time.perf_counter() - started
        started = time.perf_counter()
        await store.restore(first)
        restored = time.perf_counter() - started
        await store.aclose()
    return saved_first * 1000, saved_later * 1000, restored * 1000


async def main(files: int) -> None:
    print(f"{files} files of ~4 KB; medians of 5 rounds, ms")
    print(f"{'store':<10}{'F first save':>14}{'S later save':>14}{'R restore':>12}")
    backends: tuple[Backend, ...] = ("git", "snapshot")
    for backend in backends:
        rounds = [await _round(backend, files, r) for r in range(5)]
        first, later, restore = (statistics.median(column) for column in zip(*rounds, strict=True))
        print(f"{backend:<10}{first:>14.0f}{later:>14.0f}{restore:>12.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 files instead of 2,000")
    arguments = parser.parse_args()
    anyio.run(main, 200 if arguments.quick else 2000)
