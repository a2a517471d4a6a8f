"""Benchmark the task board against running the same tasks with plain `Harness.run`.

    python bench/board.py                     # 1,000 tasks, 50 agents, asyncio and trio
    python bench/board.py --tasks 200 --backend trio --delay 0.01

Each task is a task file (a plain loop, a files check, a budget) whose scripted agent
(`ScriptedModelClient`) writes the task's file and claims done: two model calls, one tool
call. The tasks are independent, so both sides can run 50 at a time:

- board: `Board.run` with a pool of 50 agents (the SQLite state, the event log, one
  transcript per attempt, assignment by priority, the heartbeat);
- plain: the same specs, one `Harness.run` per task, 50 at a time in a task group (a
  `CapacityLimiter`), each also writing its JSONL transcript.

Printed per backend: wall and CPU time of each side (median of --repeat runs, each in a fresh
folder) and the board's overhead per task, in wall ms and CPU µs.
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

from harness import Harness, ModelClient, ScriptedModelClient
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


async def run_plain(folder: Path, tasks: tuple[BoardTask, ...], agents: int, delay: float) -> int:
    limiter = anyio.CapacityLimiter(agents)
    transcripts = folder / "plain-transcripts"
    done = 0

    async def one(task: BoardTask) -> None:
        nonlocal done
        async with limiter:
            spec = task.spec
            harness = Harness(
                model=script(task.id, delay),
                policy=spec.policy,
                tools=spec.tools,
                strategy=spec.build_strategy(),
                workspace=folder / "workspace",
                transcript=transcripts / f"{task.id}.jsonl",
            )
            result = await harness.run(task.body)
            if not result.verified:
                raise AssertionError(f"{task.id} did not complete: {result!r}")
            done += 1

    async with anyio.create_task_group() as group:
        for task in tasks:
            group.start_soon(one, task)
    return done


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
        f"{'backend':<8} {'plain wall':>11} {'board wall':>11} {'plain CPU':>10} "
        f"{'board CPU':>10} {'overhead/task':>14} {'CPU/task':>9}"
    )
    for backend in backends:
        plain, board = [], []
        for _ in range(args.repeat):  # interleaved, so a busy moment hits both sides
            plain.append(measure(run_plain, args.tasks, args.agents, args.delay, backend))
            board.append(measure(run_board, args.tasks, args.agents, args.delay, backend))
        pw = statistics.median(w for w, _ in plain)
        bw = statistics.median(w for w, _ in board)
        pc = statistics.median(c for _, c in plain)
        bc = statistics.median(c for _, c in board)
        print(
            f"{backend:<8} {pw:>10.2f}s {bw:>10.2f}s {pc:>9.2f}s {bc:>9.2f}s "
            f"{(bw - pw) / args.tasks * 1e3:>11.2f} ms {(bc - pc) / args.tasks * 1e6:>6.0f} µs"
        )
    print(f"(bench took {time.perf_counter() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
