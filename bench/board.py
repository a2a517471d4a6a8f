"""Benchmark the task board against running the same tasks with plain `Harness.run`.

    python bench/board.py                     # 10,000 tasks, 100 agents, asyncio and trio
    python bench/board.py --tasks 1000 --agents 50 --backend trio --delay 0.01
    python bench/board.py --ray-tasks 500     # and the Ray engine on a local cluster

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

With `--ray-tasks N`: N tasks on a board whose engine is Ray (`--engine ray`, a local
cluster started here), against the same N tasks through plain runs, and Ray's own cost of a
task (N empty remote tasks, as many at a time as the board has agents): the board's
overhead per attempt on Ray set beside Ray's per-task overhead.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
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


def ray_figures(count: int, agents: int, delay: float) -> None:
    """The board on Ray against plain runs of the same tasks, and Ray's own cost of a task."""
    try:
        import ray
    except ImportError:
        print("Ray: not installed (pip install 'completion-harness[ray]'); skipped")
        return
    started = time.perf_counter()
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    except Exception as exc:
        print(f"Ray: a local cluster could not start here ({type(exc).__name__}: {exc})")
        return
    try:
        print(f"Ray: local cluster started in {time.perf_counter() - started:.1f} s")

        @ray.remote(num_cpus=0)
        def empty() -> None:
            return None

        ray.get([empty.remote() for _ in range(50)])  # warm the workers

        def ray_tasks() -> float:
            start = time.perf_counter()
            pending: list[Any] = []
            for _ in range(count):
                if len(pending) >= agents:
                    _, pending = ray.wait(pending, num_returns=1)
                pending.append(empty.remote())
            ray.get(pending)
            return (time.perf_counter() - start) / count

        async def on_ray(
            folder: Path, tasks: tuple[BoardTask, ...], agents: int, delay: float
        ) -> int:
            return await run_board(folder, tasks, agents, delay, RayEngine(num_cpus=0))

        per_ray_task = ray_tasks()
        board_wall, _ = measure(on_ray, count, agents, delay, "asyncio")
        plain_wall, _ = measure(run_plain_with_transcripts, count, agents, delay, "asyncio")
        overhead = (board_wall - plain_wall) / count
        print(
            f"Ray, {count} tasks, {agents} at a time (asyncio): board {board_wall:.2f} s, "
            f"plain+t {plain_wall:.2f} s; the board's overhead per attempt on Ray "
            f"{overhead * 1e3:.2f} ms, Ray's own per task {per_ray_task * 1e3:.2f} ms "
            f"({overhead / per_ray_task:.1f}x Ray's)"
        )
    finally:
        ray.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--ray-tasks", type=int, default=0, help="tasks on Ray (0: skip)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds per model call")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    args = parser.parse_args()
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        cache_logger_on_first_use=True,
    )
    backends = ["asyncio", "trio"] if args.backend == "both" else [args.backend]
    started = time.perf_counter()
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
    if args.ray_tasks:
        ray_figures(args.ray_tasks, args.agents, args.delay)
    print(f"(bench took {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
