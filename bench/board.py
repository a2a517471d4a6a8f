"""Benchmark the task board against running the same tasks with plain `Harness.run`.

    python bench/board.py                     # 10,000 tasks, 100 agents, asyncio and trio
    python bench/board.py --tasks 1000 --agents 50 --backend trio --delay 0.01
    python bench/board.py --ray-only --ray-tasks 10,30 --agents 10   # the Ray engine only

Each task is a task file (a plain loop, a files check, a budget) whose scripted agent
(`ScriptedModelClient`) writes the task's file and claims done: two model calls, one tool
call. The tasks are independent, so both sides can run 50 at a time:

- board: `Board.run` with a pool of 50 agents (the SQLite state, the event log, one
  transcript per attempt, assignment by priority, the heartbeat);
- plain: the same specs, one `Harness.run` per task, 50 at a time in a task group (a
  `CapacityLimiter`); "plain+t" also writes each run's JSONL transcript, as the board does
  (on a slow file system, creating a thousand files is a large part of either side).

Printed per backend: wall and CPU time of each side (median of --repeat runs, each in a fresh
folder, interleaved) and the board's overhead per task over each plain side, in wall ms and
CPU µs (target: at most 1 ms of CPU per task over "plain+t"). Wall time on a shared machine
moves a lot between runs; CPU time less.

Then `harness board status` on the finished board (all tasks complete): the command's own
time, in this process (target: at most 50 ms), and a fresh `harness board status` process
for information (Python's start-up included).

With `--ray-tasks N1,N2,...`: at each count, on a fresh local Ray instance each time, a board
whose engine is Ray (`--engine ray`), Ray's own tasks (an empty remote function, and one
that imports the harness as an attempt's worker must), and plain runs of the same tasks
without Ray, `--agents` at a time. A line fitted through each side's medians splits its
wall and CPU time (this process and the Ray instance's) into a cost per task, the slope,
and a fixed cost, the intercept: Ray starting worker processes and the code they import.
The board's overhead per attempt is its slope less plain runs' slope, set beside Ray's own
per task; its fixed cost beside that of Ray tasks importing the harness. Times include
writing the task files on the board's and plain side alike.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import structlog

from harness import ModelClient, ScriptedModelClient
from strategies._cli import main as harness_command
from strategies.board import (
    Agent,
    AttemptInfo,
    Board,
    BoardSettings,
    BoardTask,
    Engine,
    LocalEngine,
    RayEngine,
    load_tasks,
)

CPU_TARGET_MS = 1.0
STATUS_TARGET_MS = 50.0

TASK = """id = "t{i:04d}"
role = "worker"
priority = {priority}
body = "Write t{i:04d}.txt."
tools = ["write_file"]

[budget]
max_turns = 6

[[checks]]
type = "files"
paths = ["t{i:04d}.txt"]
"""


def write_board(folder: Path, tasks: int) -> tuple[BoardTask, ...]:
    (folder / "tasks").mkdir(parents=True)
    (folder / "workspace").mkdir()
    for i in range(tasks):
        (folder / "tasks" / f"t{i:04d}.toml").write_text(TASK.format(i=i, priority=i % 7))
    return load_tasks(folder / "tasks")


def script(task: str, delay: float) -> ScriptedModelClient:
    write = {
        "text": "writing",
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": f"{task}.txt", "content": task}}
        ],
        "delay": delay,
    }
    return ScriptedModelClient.from_responses([write, {"text": "done", "delay": delay}])


def model_factory(delay: float) -> Callable[[AttemptInfo], ModelClient]:
    def build(info: AttemptInfo) -> ModelClient:
        return script(info.task, delay)

    return build


async def run_board(
    folder: Path,
    tasks: tuple[BoardTask, ...],
    agents: int,
    delay: float,
    engine: Engine | None = None,
) -> int:
    board = Board(
        tasks=tasks,
        agents=[Agent(role="worker", model=model_factory(delay))],
        state=folder / "state",
        size=agents,
        settings=BoardSettings(workspace=folder / "workspace"),
        engine=engine if engine is not None else LocalEngine(),
    )
    result = await board.run()
    if not result.complete:
        raise AssertionError(f"the board did not complete: {result.counts}")
    return len(result.tasks)


async def run_plain(
    folder: Path,
    tasks: tuple[BoardTask, ...],
    agents: int,
    delay: float,
    transcripts: bool = False,
) -> int:
    limiter = anyio.CapacityLimiter(agents)
    done = 0

    async def one(task: BoardTask) -> None:
        nonlocal done
        async with limiter:
            spec = task.spec
            harness = spec.harness(
                model=script(task.id, delay),
                workspace=folder / "workspace",
                transcript=folder / "plain" / f"{task.id}.jsonl" if transcripts else None,
            )
            result = await harness.run(task.body)
            if not result.verified:
                raise AssertionError(f"{task.id} did not complete: {result!r}")
            done += 1

    async with anyio.create_task_group() as group:
        for task in tasks:
            group.start_soon(one, task)
    return done


async def run_plain_with_transcripts(
    folder: Path, tasks: tuple[BoardTask, ...], agents: int, delay: float
) -> int:
    return await run_plain(folder, tasks, agents, delay, transcripts=True)


def measure(
    side: Callable[[Path, tuple[BoardTask, ...], int, float], Any],
    count: int,
    agents: int,
    delay: float,
    backend: str,
    after: Callable[[Path], None] | None = None,
) -> tuple[float, float]:
    folder = Path(tempfile.mkdtemp(prefix="board-bench-"))
    try:
        tasks = write_board(folder, count)
        wall, cpu = time.perf_counter(), time.process_time()
        finished = anyio.run(side, folder, tasks, agents, delay, backend=backend)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if finished != count:
            raise AssertionError(f"{finished} of {count} tasks finished")
        if after is not None:
            after(folder)
        return wall, cpu
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def status_times(folder: Path, repeat: int = 5) -> tuple[float, float]:
    """`harness board status` on a finished board: median seconds in this process (the
    command's own work), and of a fresh process (Python's start-up included)."""
    args = ["board", "status", str(folder), "--state", str(folder / "state")]
    inside: list[float] = []
    for _ in range(repeat):
        out = io.StringIO()
        start = time.perf_counter()
        with contextlib.redirect_stdout(out):
            code = harness_command(args)
        inside.append(time.perf_counter() - start)
        if code != 0 or "complete" not in out.getvalue():
            raise AssertionError(f"board status failed ({code}): {out.getvalue()[-500:]}")
    process: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "strategies", *args], check=True, stdout=subprocess.DEVNULL
        )
        process.append(time.perf_counter() - start)
    return statistics.median(inside), statistics.median(process)


def _cluster_cpu() -> float:
    """CPU seconds (user + system) used so far by this process's descendants: the local Ray
    instance's GCS, raylet and workers. Read from /proc (Linux); NaN elsewhere."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    parent: dict[int, int] = {}
    used: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the process ended meanwhile
            continue
        fields = text[text.rindex(")") + 2 :].split()  # the name may hold spaces
        pid = int(stat.parent.name)
        parent[pid] = int(fields[1])
        used[pid] = (int(fields[11]) + int(fields[12])) / ticks
    if not used:
        return float("nan")
    me, total = os.getpid(), 0.0
    for pid, cpu in used.items():
        up = parent.get(pid)
        while up is not None and up > 1 and up != me:
            up = parent.get(up)
        if up == me:
            total += cpu
    return total


def _fit(points: dict[int, float]) -> tuple[float, float]:
    """Least-squares line through (count, seconds): (seconds per task, fixed seconds)."""
    xs, ys = list(points), list(points.values())
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    return slope, my - slope * mx


def ray_figures(counts: list[int], agents: int, delay: float, repeat: int, cpus: float) -> None:
    """The board on Ray, plain runs and Ray's own tasks at several task counts: a line fitted
    through each side's medians splits its time into a cost per task (the slope) and a fixed
    cost (the intercept: starting worker processes, importing code in them)."""
    try:
        import ray
    except ImportError:
        print("Ray: not installed (pip install 'completion-harness[ray]'); skipped")
        return

    def empty() -> None:
        return None

    def importing() -> None:
        import strategies.board  # noqa: F401  (what a board attempt's worker imports)

    async def on_ray(folder: Path, tasks: tuple[BoardTask, ...], agents: int, delay: float) -> int:
        return await run_board(folder, tasks, agents, delay, RayEngine(num_cpus=cpus))

    def ray_tasks(function: Callable[[], None]) -> Callable[[int], None]:
        def run(count: int) -> None:
            remote = ray.remote(num_cpus=cpus)(function)
            pending: list[Any] = []
            for _ in range(count):
                if len(pending) >= agents:
                    _, pending = ray.wait(pending, num_returns=1)
                pending.append(remote.remote())
            ray.get(pending)

        return run

    def board(count: int) -> None:
        measure(on_ray, count, agents, delay, "asyncio")

    def plain(count: int) -> None:
        measure(run_plain_with_transcripts, count, agents, delay, "asyncio")

    sides: dict[str, tuple[Callable[[int], None], bool]] = {
        "plain+t (no Ray)": (plain, False),
        "Ray: empty task": (ray_tasks(empty), True),
        "Ray: task importing the harness": (ray_tasks(importing), True),
        "board on Ray": (board, True),
    }
    # Each sample on Ray gets a fresh local instance, so every side starts from the same
    # state: Ray's pre-started workers, nothing of ours imported in them yet.
    starts: list[float] = []
    wall: dict[str, dict[int, list[float]]] = {n: {c: [] for c in counts} for n in sides}
    cpu: dict[str, dict[int, list[float]]] = {n: {c: [] for c in counts} for n in sides}
    for _ in range(repeat):  # interleaved, so a busy moment hits every side
        for count in counts:
            for name, (side, on_a_cluster) in sides.items():
                if on_a_cluster:
                    started = time.perf_counter()
                    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
                    starts.append(time.perf_counter() - started)
                try:
                    before = (time.perf_counter(), time.process_time() + _cluster_cpu())
                    side(count)
                    wall[name][count].append(time.perf_counter() - before[0])
                    cpu[name][count].append(time.process_time() + _cluster_cpu() - before[1])
                finally:
                    if on_a_cluster:
                        ray.shutdown()
    print(
        f"Ray: a local 2-CPU instance per sample (started in {statistics.median(starts):.1f} s, "
        f"not counted); attempts and Ray tasks ask for {cpus:g} CPU, {agents} at a time; "
        f"median of {repeat}; CPU is this process and the Ray instance's processes"
    )
    head = "".join(f"{f'{c} tasks':>16}" for c in counts)
    print(f"{'side':<32}{head}   wall per task, fixed  | CPU per task, fixed")
    fits: dict[str, tuple[float, float, float, float]] = {}
    for name in sides:
        walls = {c: statistics.median(v) for c, v in wall[name].items()}
        cpus_ = {c: statistics.median(v) for c, v in cpu[name].items()}
        fits[name] = (*_fit(walls), *_fit(cpus_))
        cells = "".join(f"{walls[c]:>7.2f}s {cpus_[c]:>6.2f}s" for c in counts)
        w, wf, c, cf = fits[name]
        print(
            f"{name:<32}{cells}   {w * 1e3:>6.1f} ms {wf:>6.2f} s | {c * 1e3:>6.1f} ms {cf:>6.2f} s"
        )
    board_w, board_wf, board_c, board_cf = fits["board on Ray"]
    plain_w, _, plain_c, _ = fits["plain+t (no Ray)"]
    empty_w, _, empty_c, _ = fits["Ray: empty task"]
    _, import_wf, _, import_cf = fits["Ray: task importing the harness"]
    print(
        f"the board's overhead per attempt on Ray (slope over plain+t's): "
        f"{(board_w - plain_w) * 1e3:.1f} ms wall, {(board_c - plain_c) * 1e3:.1f} ms CPU; "
        f"Ray's own per task: {empty_w * 1e3:.1f} ms wall, {empty_c * 1e3:.1f} ms CPU"
    )
    print(
        f"fixed cost of a board on Ray: {board_wf:.2f} s wall, {board_cf:.2f} s CPU; of Ray "
        f"tasks importing the harness: {import_wf:.2f} s wall, {import_cf:.2f} s CPU"
    )


def _counts(text: str) -> list[int]:
    counts = sorted({int(word) for word in text.split(",") if word.strip()})
    if len(counts) < 2 or counts[0] < 1:
        raise argparse.ArgumentTypeError(
            f"give at least two different positive task counts, e.g. 10,30 (got {text!r})"
        )
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument(
        "--ray-tasks",
        type=_counts,
        default=[],
        help="task counts on Ray, e.g. 10,30 (at least two: a line is fitted; none: skip)",
    )
    parser.add_argument("--ray-cpus", type=float, default=0.0, help="CPUs per Ray attempt")
    parser.add_argument("--ray-only", action="store_true", help="only the Ray figures")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds per model call")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    args = parser.parse_args()
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        cache_logger_on_first_use=True,
    )
    started = time.perf_counter()
    failed = False if args.ray_only else local_figures(args)
    if args.ray_tasks:
        ray_figures(args.ray_tasks, args.agents, args.delay, args.repeat, args.ray_cpus)
    print(f"(bench took {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 1 if failed else 0


def local_figures(args: argparse.Namespace) -> bool:
    """The board against plain runs on asyncio and trio, and `board status`: whether a
    target was missed."""
    backends = ["asyncio", "trio"] if args.backend == "both" else [args.backend]
    folder = Path(tempfile.mkdtemp(prefix="board-bench-load-"))
    write_board(folder, args.tasks)
    load = time.perf_counter()
    load_tasks(folder / "tasks")
    load = time.perf_counter() - load
    shutil.rmtree(folder)
    print(
        f"{args.tasks} tasks (2 model calls, 1 tool call each, model delay {args.delay * 1e3:g} "
        f"ms), {args.agents} agents; median of {args.repeat}; loading the task files: "
        f"{load * 1e3:.0f} ms"
    )
    print(
        f"{'backend':<8} {'side':<8} {'wall':>7} {'CPU':>7}   board overhead per task (wall, CPU)"
    )
    sides = {"plain": run_plain, "plain+t": run_plain_with_transcripts, "board": run_board}
    status: list[tuple[float, float]] = []
    failed = False

    def look(folder: Path) -> None:
        status.append(status_times(folder))

    for backend in backends:
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        for _ in range(args.repeat):  # interleaved, so a busy moment hits every side
            for name, side in sides.items():
                after = look if name == "board" and not status else None
                samples[name].append(
                    measure(side, args.tasks, args.agents, args.delay, backend, after)
                )
        wall = {n: statistics.median(w for w, _ in runs) for n, runs in samples.items()}
        cpu = {n: statistics.median(c for _, c in runs) for n, runs in samples.items()}
        for name in sides:
            extra = ""
            if name != "board":
                extra = (
                    f"   {(wall['board'] - wall[name]) / args.tasks * 1e3:+.2f} ms, "
                    f"{(cpu['board'] - cpu[name]) / args.tasks * 1e6:+.0f} µs over {name}"
                )
            print(f"{backend:<8} {name:<8} {wall[name]:>6.2f}s {cpu[name]:>6.2f}s{extra}")
        per_task = (cpu["board"] - cpu["plain+t"]) / args.tasks * 1e3
        met = per_task <= CPU_TARGET_MS
        failed |= not met
        print(
            f"{backend:<8} board CPU per task over plain+t: {per_task:.2f} ms "
            f"(target <= {CPU_TARGET_MS:g} ms): {'PASS' if met else 'FAIL'}"
        )
    inside, process = status[0]
    met = inside * 1e3 <= STATUS_TARGET_MS
    failed |= not met
    print(
        f"harness board status, {args.tasks:,} tasks: {inside * 1e3:.0f} ms in-process "
        f"(target <= {STATUS_TARGET_MS:g} ms): {'PASS' if met else 'FAIL'}; "
        f"{process * 1e3:.0f} ms as a fresh process (info)"
    )
    return failed


if __name__ == "__main__":
    sys.exit(main())
