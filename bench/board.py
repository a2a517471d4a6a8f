"""Benchmark the task board against running the same tasks with plain `Harness.run`.

    python bench/board.py                     # 1,000 tasks, 50 agents, asyncio and trio
    python bench/board.py --tasks 200 --backend trio --delay 0.01

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
CPU µs. Wall time on a shared machine moves a lot between runs; CPU time less.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import structlog

from harness import ModelClient, ScriptedModelClient
from strategies.board import Agent, AttemptInfo, Board, BoardSettings, BoardTask, load_tasks

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


async def run_board(folder: Path, tasks: tuple[BoardTask, ...], agents: int, delay: float) -> int:
    board = Board(
        tasks=tasks,
        agents=[Agent(role="worker", model=model_factory(delay))],
        state=folder / "state",
        size=agents,
        settings=BoardSettings(workspace=folder / "workspace"),
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
) -> tuple[float, float]:
    folder = Path(tempfile.mkdtemp(prefix="board-bench-"))
    try:
        tasks = write_board(folder, count)
        wall, cpu = time.perf_counter(), time.process_time()
        finished = anyio.run(side, folder, tasks, agents, delay, backend=backend)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if finished != count:
            raise AssertionError(f"{finished} of {count} tasks finished")
        return wall, cpu
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1_000)
    parser.add_argument("--agents", type=int, default=50)
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
    for backend in backends:
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        for _ in range(args.repeat):  # interleaved, so a busy moment hits every side
            for name, side in sides.items():
                samples[name].append(measure(side, args.tasks, args.agents, args.delay, backend))
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
    print(f"(bench took {time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
