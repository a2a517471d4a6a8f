"""Benchmark W5: fixture replays through the pytest plugin against trivial pytest tests.

    python bench/pytest_replays.py               # 2,000 tests a side, asyncio and trio
    python bench/pytest_replays.py --tests 500 --repeat 3 --backend trio

In a temporary folder: a file of `--tests` trivial tests (``assert i + 1 == i + 1``), and per
backend a file of as many tests that each replay a two-turn JSONL fixture (a tool call, then
done) through `harness_fixture`, with the plugin's default policy, and assert the halt and
the events with `assert_halted` and `assert_events`, as a CI suite of replays would. Each
file runs in a fresh ``pytest -p no:cacheprovider -q`` process; the printed figures are
medians of `--repeat` interleaved runs, wall time, with the ratio replay/trivial (target: at
most 2x) and, for information, the same ratio with pytest's own start-up (an empty run)
taken off both sides, and trivial async tests on the same backend (the cost of pytest's
anyio plugin, which every async test pays).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 2.0

TRIVIAL = """
import pytest

@pytest.mark.parametrize("i", range({tests}))
def test_trivial(i):
    assert i + 1 == i + 1
"""

TRIVIAL_ASYNC = """
import pytest

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "{backend}"


@pytest.mark.parametrize("i", range({tests}))
async def test_trivial(i):
    assert i + 1 == i + 1
"""

REPLAY = '''
import pytest

from harness import Completed, tool
from pytest_completion_harness import assert_events, assert_halted

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "{backend}"


@tool(inline=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.mark.parametrize("i", range({tests}))
async def test_replay(i, harness_fixture):
    harness = harness_fixture("add.jsonl", tools=[add])
    result = await harness.run("Add 2 and 3.")
    assert_halted(result, Completed)
    assert_events(result, ["tool.called", "run.halted"])
'''

FIXTURE = [
    {"tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 2, "b": 3}}]},
    {"text": "5", "expect": {"last_message_contains": "5"}},
]

EMPTY = "def test_nothing():\n    pass\n"


def write(folder: Path, tests: int, backends: list[str]) -> None:
    (folder / "test_trivial.py").write_text(TRIVIAL.format(tests=tests))
    (folder / "test_empty.py").write_text(EMPTY)
    (folder / "add.jsonl").write_text("".join(json.dumps(row) + "\n" for row in FIXTURE))
    for backend in backends:
        (folder / f"test_async_{backend}.py").write_text(
            TRIVIAL_ASYNC.format(tests=tests, backend=backend)
        )
        (folder / f"test_replay_{backend}.py").write_text(
            REPLAY.format(tests=tests, backend=backend)
        )


def timed(folder: Path, name: str, expected: int) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", name],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or f"{expected} passed" not in done.stdout:
        raise AssertionError(f"{name} did not pass:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--tests", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    args = parser.parse_args()
    backends = ["asyncio", "trio"] if args.backend == "both" else [args.backend]
    folder = Path(tempfile.mkdtemp(prefix="bench-replays-"))
    try:
        write(folder, args.tests, backends)
        files = {"empty": ("test_empty.py", 1), "trivial": ("test_trivial.py", args.tests)}
        for backend in backends:
            files[f"async {backend}"] = (f"test_async_{backend}.py", args.tests)
            files[f"replay {backend}"] = (f"test_replay_{backend}.py", args.tests)
        for name, expected in files.values():  # warm the OS caches once
            timed(folder, name, expected)
        samples: dict[str, list[float]] = {key: [] for key in files}
        for _ in range(args.repeat):
            for key, (name, expected) in files.items():
                samples[key].append(timed(folder, name, expected))
        median = {key: statistics.median(times) for key, times in samples.items()}
        empty, trivial = median["empty"], median["trivial"]
        print(
            f"W5: {args.tests:,} tests a file, each file in a fresh pytest process; median of "
            f"{args.repeat}, wall seconds; pytest's start-up (one empty test): {empty:.2f} s"
        )
        print(f"  trivial tests                {trivial:6.2f} s")
        failed = False
        for backend in backends:
            replay = median[f"replay {backend}"]
            plain_async = median[f"async {backend}"]
            ratio = replay / trivial
            net = (replay - empty) / (trivial - empty)
            met = ratio <= TARGET
            failed |= not met
            print(
                f"  {backend:<7} trivial async  {plain_async:6.2f} s   "
                f"({plain_async / trivial:.2f}x the trivial tests)"
            )
            print(
                f"  {backend:<7} replays        {replay:6.2f} s   {ratio:.2f}x the trivial tests "
                f"(target <= {TARGET:g}x): {'PASS' if met else 'FAIL'}; without pytest's "
                f"start-up {net:.2f}x; per replay {(replay - trivial) / args.tests * 1e3:.2f} ms "
                "more than a trivial test"
            )
        return 1 if failed else 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
