"""What guarding the verifier costs at a run's start and at each claim.

    python bench/verification.py            # 2,000 protected files of 9 KB each
    python bench/verification.py --quick    # 200

R: recording the protected paths when a run starts (walk, read, digest, keep the bytes).
C: comparing them at a claim (walk, read, digest), the price every claim pays.
P: making the pristine copy for a claim that found a change (the whole workspace copied, the
   recorded files laid over it, the copy removed), paid only by claims rejected anyway.
Medians of 5 rounds, in ms.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from harness.extend import PathGuard, ProtectedPaths


def _tree(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / "tests" / f"pkg{i // 50}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"test_{i % 50}.py").write_text("assert True\n" * 750)
    (root / "src").mkdir()
    (root / "src" / "code.py").write_text("x = 1\n")


async def _pristine(guard: PathGuard, root: Path) -> None:
    async with guard.pristine(root, guard.changes(root)):
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    files = 200 if parser.parse_args().quick else 2000
    rules = ProtectedPaths(["tests/**"])
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        _tree(root, files)
        record, compare, copy = [], [], []
        for _ in range(5):
            started = time.perf_counter()
            guard = PathGuard.record(root, rules)
            record.append(time.perf_counter() - started)
            started = time.perf_counter()
            assert guard.changes(root) == ()
            compare.append(time.perf_counter() - started)
            victim = root / "tests" / "pkg0" / "test_0.py"
            original = victim.read_text()
            victim.write_text("weakened\n")
            started = time.perf_counter()
            anyio.run(_pristine, guard, root)
            copy.append(time.perf_counter() - started)
            victim.write_text(original)
    print(f"{files} protected files of 9 KB")
    for label, samples in (("R record", record), ("C compare", compare), ("P pristine", copy)):
        print(f"{label:<12} {statistics.median(samples) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
