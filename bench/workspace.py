"""Benchmark workspace change detection in a big workspace against the bare loop.

    python bench/workspace.py                 # 100,000 files, asyncio and trio
    python bench/workspace.py --files 20000 --turns 300 --repeat 3 --backend trio

A session of `--turns` turns (the model answers at once, the `add` tool touches nothing)
runs four ways, interleaved, `--repeat` times: the bare loop (bench/_bare.py), the harness
with the bench's usual policy ("harness"), the same plus the workspace readers
(`NoProgressSensor`, `ToolUsageFeedback` every 10 calls, a `file_appears` trigger on one
path: "readers"), and those plus a `file_appears` glob ("readers + glob", for information).
Printed per backend:

- µs per turn of each (wall, and this process's CPU with worker threads), counted from the
  first turn's start to the run's end, so the run's start-up is not in it;
- added per turn: the readers' cost over the harness without them, in runs of
  `--paced-turns` turns whose model answers after `--model-ms` (20 ms, less than any model
  served over a network takes; target: at most 1 ms of wall and of CPU); with the model
  answering at once, for information: a turn with tool calls then waits for the watcher,
  since the next turn's writes could share a batch of events with this turn's end;
- scans on the event loop: every walk and every look at changed paths is counted with the
  thread it ran on (target: none on the loop's thread); the worst event-loop stall (how late
  a 1 ms sleep wakes, during the turns) is shown beside one synchronous walk of the tree,
  which is what every turn used to cost on the loop (the stall also counts the machine's
  own noise);
- the run's start-up: the watcher's setup and the baseline (a walk that hashes every file),
  in a worker thread, and the worst stall meanwhile: watchfiles adds its recursive watches
  while holding the GIL, which the event loop waits for once per run;
- without a watcher (no `watchfiles`), for information: a walk per turn, in a worker thread.

A glob waits for pending file events on every turn (it fires on the turn its file appears,
which takes two of the watcher's 5 ms steps); the other readers wait only on a turn whose
reading would warn or halt, or (`NoProgressSensor`) when the model answered faster than the
watcher handled the previous turn's end, so the paced "readers" row is the usual cost.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _backends import BACKENDS, Backend
from _bare import bare_script, bare_session
from _workload import TASK, add, configure_logging, default_policy, harness_script

from harness import Event, Harness, RunHalted, TurnStarted
from harness.extend import ModelRequest, ModelResponse
from termination import (
    FeedbackTrigger,
    NoProgressSensor,
    TerminationPolicy,
    ToolUsageFeedback,
)
from termination._fingerprint import WorkspaceScanner

TARGET_MS = 1.0


def build_tree(root: Path, files: int) -> None:
    """`files` small files, 100 to a folder, ten folders to a parent folder."""
    for i in range(files):
        folder = root / f"d{i // 1000:03d}" / f"e{i // 100 % 10}"
        if i % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"f{i % 100}.txt").write_text(f"file {i}\n")


class Model:
    """Answers turn k with the script's k-th response, after `delay` seconds (at least one
    trip through the loop)."""

    def __init__(
        self,
        responses: tuple[ModelResponse, ...],
        sleep: Callable[[float], Any],
        delay: float = 0.0,
    ):
        self._responses = responses
        self._sleep = sleep
        self._delay = delay

    async def complete(self, request: ModelRequest) -> ModelResponse:
        await self._sleep(self._delay)
        return self._responses[request.turn - 1]


class Stopwatch:
    """A sink that reads the clocks at the first turn's start and at the run's end."""

    def __init__(self) -> None:
        self.first: tuple[float, float] | None = None
        self.last: tuple[float, float] = (0.0, 0.0)

    def emit(self, event: Event) -> None:
        if isinstance(event, TurnStarted) and self.first is None:
            self.first = (time.perf_counter(), time.process_time())
        elif isinstance(event, RunHalted):
            self.last = (time.perf_counter(), time.process_time())


class Quiet:
    """A provider with nothing to say."""

    def __init__(self, name: str) -> None:
        self.name = name

    def should_run(self, context: Any) -> bool:
        return False

    def provide(self, context: Any) -> Any:
        raise AssertionError("never asked")


def reading_policy(turns: int, *, glob: bool = False) -> TerminationPolicy:
    """The bench's policy plus the sensor and providers that read the workspace."""
    base = default_policy(turns)
    feedback: list[Any] = [
        (
            ToolUsageFeedback(max_calls_without_progress=turns + 10),
            FeedbackTrigger(every_n_calls=10),
        ),
        (Quiet("Done"), FeedbackTrigger(file_appears="DONE.md")),
    ]
    if glob:
        feedback.append((Quiet("Outputs"), FeedbackTrigger(file_appears="out/**/*.json")))
    return TerminationPolicy(
        budget=base.budget,
        sensors=[*base.sensors, NoProgressSensor(limit=turns + 10)],
        completion_check=base.completion_check,
        feedback=feedback,
    )


class ScanThreads:
    """Counts the scanner's walks and updates by the thread they ran on."""

    def __init__(self) -> None:
        self.loop_thread = threading.get_ident()
        self.on_loop = 0
        self.elsewhere = 0

    def install(self) -> None:
        for name in ("scan_changes", "update"):
            original = getattr(WorkspaceScanner, name)

            def counted(scanner: Any, *args: Any, _original: Any = original) -> Any:
                if threading.get_ident() == self.loop_thread:
                    self.on_loop += 1
                else:
                    self.elsewhere += 1
                return _original(scanner, *args)

            setattr(WorkspaceScanner, name, counted)


async def stall_watch(
    backend: Backend, job: Callable[[Stopwatch], Awaitable[Any]]
) -> tuple[Any, float, float]:
    """Run `job` while a task measures how late a 1 ms sleep wakes: the worst lateness before
    the run's first turn (its start-up) and after it (its turns)."""
    watch = Stopwatch()
    worst = [0.0, 0.0]
    done = False

    async def heartbeat() -> None:
        while not done:
            start = time.perf_counter()
            await backend.sleep(0.001)
            phase = 0 if watch.first is None else 1
            worst[phase] = max(worst[phase], time.perf_counter() - start - 0.001)

    result: list[Any] = []

    async def main() -> None:
        nonlocal done
        try:
            result.append(await job(watch))
        finally:
            done = True

    await backend.run_all([heartbeat, main])
    return result[0], worst[0], worst[1]


def measure(
    backend: Backend, root: Path, turns: int, repeat: int, delay: float = 0.0
) -> dict[str, Any]:
    """The four ways, interleaved; with a `delay` (the model's answer), only the harness
    and the readers."""
    script = bare_script(turns - 1)
    responses = harness_script(turns)

    def harness(policy: TerminationPolicy) -> Harness:
        model = Model(responses, backend.sleep, delay)
        return Harness(model=model, policy=policy, tools=[add], workspace=root)

    plain = harness(default_policy(turns))
    reading = harness(reading_policy(turns))
    globbing = harness(reading_policy(turns, glob=True))

    async def bare() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        await bare_session(script, backend.sleep, 0.0)
        return (time.perf_counter() - wall) / turns, (time.process_time() - cpu) / turns

    def timed(h: Harness) -> Callable[[Stopwatch], Awaitable[tuple[float, float, float]]]:
        """A run of `h`: wall and CPU seconds per turn, and the seconds to its first turn."""

        async def run(watch: Stopwatch) -> tuple[float, float, float]:
            started = time.perf_counter()
            result = await h.run(TASK, sinks=[watch])
            assert result.verified, result
            assert result.turns == turns, result
            assert watch.first is not None
            return (
                (watch.last[0] - watch.first[0]) / (turns - 1),
                (watch.last[1] - watch.first[1]) / (turns - 1),
                watch.first[0] - started,
            )

        return run

    sides = {"plain": plain, "reading": reading, "glob": globbing}
    if delay:
        del sides["glob"]
    samples: dict[str, list[tuple[float, float]]] = {"bare": [], **{n: [] for n in sides}}
    startups: list[float] = []
    stalls: dict[str, list[float]] = {n: [] for n in sides}
    start_stalls: list[float] = []

    async def main() -> None:
        for _ in range(repeat):
            samples["bare"].append((1.0, 1.0) if delay else await bare())
            for name, h in sides.items():
                (wall, cpu, startup), at_start, stall = await stall_watch(backend, timed(h))
                samples[name].append((wall, cpu))
                stalls[name].append(stall)
                if name == "reading":
                    startups.append(startup)
                    start_stalls.append(at_start)

    backend.run(main)
    out: dict[str, Any] = {
        name: (
            statistics.median(w for w, _ in runs) * 1e6,
            statistics.median(c for _, c in runs) * 1e6,
        )
        for name, runs in samples.items()
    }
    out["stall"] = {name: statistics.median(v) * 1e3 for name, v in stalls.items()}
    out["startup"] = statistics.median(startups)
    out["start_stall"] = statistics.median(start_stalls) * 1e3
    return out


def walk_mode(backend: Backend, root: Path, turns: int) -> tuple[float, float]:
    """Per-turn wall ms and the worst stall (ms) when no watcher can run (the walk fallback)."""
    saved = sys.modules.get("watchfiles")
    sys.modules["watchfiles"] = None  # type: ignore[assignment]
    try:
        responses = harness_script(turns)
        h = Harness(
            model=Model(responses, backend.sleep),
            policy=reading_policy(turns, glob=True),
            tools=[add],
            workspace=root,
        )

        async def run(watch: Stopwatch) -> float:
            result = await h.run(TASK, sinks=[watch])
            assert result.verified, result
            assert watch.first is not None
            return (watch.last[0] - watch.first[0]) / (turns - 1)

        async def main() -> tuple[float, float]:
            per_turn, _, stall = await stall_watch(backend, run)
            return float(per_turn), stall

        per_turn, stall = backend.run(main)
        return per_turn * 1e3, stall * 1e3
    finally:
        if saved is None:
            del sys.modules["watchfiles"]
        else:
            sys.modules["watchfiles"] = saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--walk-turns", type=int, default=4, help="turns of the walk fallback")
    parser.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    parser.add_argument(
        "--model-ms", type=float, default=20.0, help="the paced model's answer time (ms)"
    )
    parser.add_argument("--paced-turns", type=int, default=100, help="turns of the paced runs")
    args = parser.parse_args()
    configure_logging()
    backends = list(BACKENDS.values()) if args.backend == "both" else [BACKENDS[args.backend]]
    root = Path(tempfile.mkdtemp(prefix="bench-workspace-"))
    try:
        started = time.perf_counter()
        build_tree(root, args.files)
        built = time.perf_counter() - started
        scanner = WorkspaceScanner(root)
        scanner.scan()
        walks = []
        for _ in range(3):
            start = time.perf_counter()
            scanner.scan()
            walks.append(time.perf_counter() - start)
        walk_ms = statistics.median(walks) * 1e3
        scans = ScanThreads()
        scans.install()  # after the synchronous walks above, which are the old way
        print(
            f"{args.files:,} files in {len(os.listdir(root)) * 10:,} folders (built in "
            f"{built:.1f} s); one synchronous walk (the old per-turn cost, on the loop): "
            f"{walk_ms:.0f} ms; {args.turns:,} turns per session, median of {args.repeat}"
        )
        failed = False
        for backend in backends:
            on_loop, elsewhere = scans.on_loop, scans.elsewhere
            m = measure(backend, root, args.turns, args.repeat)
            on_loop, elsewhere = scans.on_loop - on_loop, scans.elsewhere - elsewhere
            bare, plain, reading, glob = m["bare"], m["plain"], m["reading"], m["glob"]
            paced = measure(backend, root, args.paced_turns, args.repeat, args.model_ms / 1e3)
            added_wall = (paced["reading"][0] - paced["plain"][0]) / 1e3
            added_cpu = (paced["reading"][1] - paced["plain"][1]) / 1e3
            met_cost = added_wall <= TARGET_MS and added_cpu <= TARGET_MS
            failed |= not met_cost or on_loop > 0
            print(f"\n{backend.name}: µs per turn (wall / CPU)")
            print(f"  bare loop             {bare[0]:9.1f} / {bare[1]:9.1f}")
            for name, label in (
                ("plain", "harness"),
                ("reading", "readers"),
                ("glob", "readers + glob"),
            ):
                wall, cpu = m[name]
                print(
                    f"  {label:<20}  {wall:9.1f} / {cpu:9.1f}   ({wall / bare[0]:.1f}x / "
                    f"{cpu / bare[1]:.1f}x the bare loop; worst stall {m['stall'][name]:.1f} ms)"
                )
            print(
                f"  added per turn by the readers, the model answering in {args.model_ms:g} ms: "
                f"{added_wall:.3f} ms wall, {added_cpu:.3f} ms CPU (target <= {TARGET_MS:g} ms): "
                f"{'PASS' if met_cost else 'FAIL'}"
            )
            print(
                f"  (info) the model answering at once: {(reading[0] - plain[0]) / 1e3:.3f} ms "
                f"wall, {(reading[1] - plain[1]) / 1e3:.3f} ms CPU (each turn waits for the "
                "watcher: its next turn could write before this turn's end is handled)"
            )
            print(
                f"  (info) added by the glob as well: {(glob[0] - plain[0]) / 1e3:.3f} ms wall, "
                f"{(glob[1] - plain[1]) / 1e3:.3f} ms CPU"
            )
            print(
                f"  scans on the event loop: {on_loop} (in worker threads: {elsewhere}); "
                f"target none: {'PASS' if on_loop == 0 else 'FAIL'}; one walk on the loop, "
                f"the old per-turn cost, is {walk_ms:.0f} ms"
            )
            print(
                f"  run start-up: {m['startup'] * 1e3:.0f} ms (the watcher, then the baseline in a "
                f"worker thread); worst stall meanwhile {m['start_stall']:.0f} ms (watchfiles "
                "sets its watches holding the GIL)"
            )
            if args.walk_turns > 1:
                per_turn, walk_stall = walk_mode(backend, root, args.walk_turns)
                print(
                    f"  (info) without a watcher: {per_turn:.0f} ms per turn (a walk in a "
                    f"worker thread), worst stall {walk_stall:.1f} ms"
                )
        return 1 if failed else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
