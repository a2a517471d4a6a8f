"""What containment costs: a command under the subreaper supervisor, a sync tool's daemon thread.

    python bench/processes.py            # 200 commands and 2,000 thread hops per row
    python bench/processes.py --quick    # a tenth of that

P: wall time of `run_process("true")` as it runs (under `harness/_process/_reaper.py` on Linux) and
   with the supervisor left out (the process group only), in ms per command. The difference
   is the price of killing what leaves the process group.
T: wall time of one hop to a worker thread and back, in µs: `anyio.to_thread.run_sync` against
   `run_sync_abandonable` (a daemon thread per call on asyncio; anyio's own daemon workers on
   trio, where the rows should match).
Rows are interleaved (one, the other, ...) and the table shows medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.to_thread

import harness._process._child as process_module
from harness._process._threads import run_sync_abandonable
from harness.extend import SystemClock, run_process

Timed = Callable[[], Awaitable[None]]


async def _median(jobs: dict[str, Timed], rounds: int, per_round: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in jobs}
    for _ in range(rounds):
        for name, job in jobs.items():
            started = time.perf_counter()
            for _ in range(per_round):
                await job()
            samples[name].append((time.perf_counter() - started) / per_round)
    return {name: statistics.median(values) for name, values in samples.items()}


async def processes(rounds: int, folder: Path) -> dict[str, float]:
    contained = process_module._contained

    async def supervised() -> None:
        result = await run_process("true", cwd=folder, env=None, timeout=30, clock=SystemClock())
        assert result.ok, result.output_tail

    async def group_only() -> None:
        process_module._contained = lambda argv: argv
        try:
            await supervised()
        finally:
            process_module._contained = contained

    return await _median({"supervised": supervised, "group only": group_only}, rounds, 10)


def _nothing() -> None:
    return None


async def threads(rounds: int) -> dict[str, float]:
    async def anyio_worker() -> None:
        await anyio.to_thread.run_sync(_nothing, abandon_on_cancel=True)

    async def abandonable() -> None:
        await run_sync_abandonable(_nothing)

    return await _median({"anyio.to_thread": anyio_worker, "abandonable": abandonable}, rounds, 100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    print(f"python {sys.version.split()[0]}, {sys.platform}")
    with tempfile.TemporaryDirectory() as folder:
        figures = anyio.run(processes, 20 // scale, Path(folder))
    for name, seconds in figures.items():
        print(f"P  run_process('true'), {name:<12} {seconds * 1e3:8.2f} ms")
    for backend in ("asyncio", "trio"):
        hops = anyio.run(threads, 20 // scale, backend=backend)
        for name, seconds in hops.items():
            print(f"T  {backend:<7} {name:<16} {seconds * 1e6:8.1f} µs")


if __name__ == "__main__":
    main()
