"""`--engine ray`: the same board with each attempt a Ray task on a local Ray instance.

Skipped only where the ``ray`` extra is not installed (CI installs it with ``dev``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _board_support import make_board, task_toml, writes

from harness import ModelClient
from strategies.board import (
    Agent,
    AttemptInfo,
    Board,
    BoardEvent,
    BoardSettings,
    RayEngine,
    load_tasks,
    open_store,
)

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray instance for the module (starting one takes seconds)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


RALPH = '[strategy]\ntype = "ralph"\nmax_iterations = 3'
TASKS = {
    "a": task_toml("a", priority=2),
    "b": task_toml(
        "b",
        priority=1,
        extra=RALPH,
        check='[[checks]]\ntype = "files"\npaths = ["b1.txt", "b2.txt"]',
    ),
    "c": task_toml("c", depends_on=["a", "b"]),
}
SCRIPTS: dict[str, list[Any]] = {
    "a.1": writes("a.txt"),
    "b.1": [*writes("b1.txt"), *writes("b2.txt")],
    "c.1": writes("c.txt"),
}


async def _run(board: Board) -> list[BoardEvent]:
    seen = []
    async with board.stream() as events:
        async for event in events:
            seen.append(event)
    return seen


@pytest.mark.anyio
async def test_a_board_runs_its_attempts_on_ray(tmp_path: Path, local_ray: None) -> None:
    """Every attempt runs on a Ray worker; its events come back to the board, which writes
    the transcripts and the log; the outcome and dependencies work as they do locally."""
    make_board(tmp_path, TASKS, SCRIPTS, per_attempt=True)
    events = await _run(Board.from_folder(tmp_path, agents=2, engine=RayEngine()))
    assert events[0].message.startswith("2 agent(s) on the ray engine")
    rejected = [e for e in events if e.kind == "task.rejected"]
    assert [e.task for e in rejected] == ["b"]  # a worker's event, reported back
    with open_store(tmp_path / ".board") as store:
        assert {t.id: t.status for t in store.tasks()} == dict.fromkeys("abc", "complete")
        attempts = store.attempts()
        assert {a.engine for a in attempts} == {"ray"}
        for attempt in attempts:
            assert '"run.halted"' in attempt.transcript.read_text()
    assert sorted(p.name for p in (tmp_path / ".board" / "workspace").iterdir()) == [
        "a.txt",
        "b1.txt",
        "b2.txt",
        "c.txt",
    ]


@pytest.mark.anyio
async def test_a_stopped_ray_board_waits_out_the_lease_and_resumes(
    tmp_path: Path, local_ray: None
) -> None:
    """Stopped mid-attempt: the Ray task is cancelled; the next board waits until the
    attempt's lease has run out before anyone else takes the task, then resumes it."""
    scripts = {
        **SCRIPTS,
        "b.1": [*writes("b1.txt"), {"text": "thinking", "delay": 600}],
        "b.2": [
            {"expect": {"last_feedback_source": "initial_check"}, **writes("b2.txt")[0]},
            writes("b2.txt")[1],
        ],
    }
    make_board(tmp_path, {"b": TASKS["b"]}, scripts, per_attempt=True)
    async with Board.from_folder(tmp_path, engine=RayEngine()).stream() as stream:
        async for event in stream:
            if event.kind == "task.rejected":
                break
    with open_store(tmp_path / ".board") as store:
        (attempt,) = store.attempts()
        assert attempt.ended_at is None
        heartbeat = attempt.heartbeat_at
    events = await _run(Board.from_folder(tmp_path, engine=RayEngine()))
    assert events[0].kind == "task.retried"
    assert events[0].at >= heartbeat + 1.0  # the lease in the test board is 1 s
    with open_store(tmp_path / ".board") as store:
        first, second = store.attempts()
    assert (first.outcome, second.outcome) == ("interrupted", "complete")
    assert second.resume.iterations == 1


def test_the_command_line_joins_a_running_cluster(tmp_path: Path, local_ray: None) -> None:
    """`--engine ray --ray-address ADDR` runs the board on that cluster (here the test's
    local instance) instead of starting one of its own."""
    make_board(tmp_path, {"a": TASKS["a"]}, SCRIPTS, per_attempt=True)
    address = ray.get_runtime_context().gcs_address
    done = subprocess.run(
        [
            *(sys.executable, "-m", "strategies", "board", "run", str(tmp_path), "-q"),
            *("--engine", "ray", "--ray-address", address),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "1 complete"
    with open_store(tmp_path / ".board") as store:
        assert [a.engine for a in store.attempts()] == ["ray"]


@pytest.mark.anyio
async def test_an_attempt_that_raises_on_a_worker_is_retried_with_its_own_error(
    tmp_path: Path, local_ray: None
) -> None:
    """An exception out of an attempt on a worker ends it as a transient failure whose
    message is that exception's type and words, as plain text: Ray's own text for it (the
    worker's name in terminal colours) never reaches the board."""

    def no_model(info: AttemptInfo) -> ModelClient:
        raise RuntimeError(f"no model for {info.task}")

    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "a.toml").write_text(task_toml("a"))
    board = Board(
        tasks=load_tasks(tmp_path / "tasks"),
        agents=[Agent(role="w", model=no_model)],
        state=tmp_path / "state",
        settings=BoardSettings(workspace=tmp_path, max_attempts=2),
        engine=RayEngine(),
    )
    events = await _run(board)
    retried = [e.message for e in events if e.kind == "task.retried"]
    assert retried == [
        "transient failure, will try again: the Ray worker failed: RuntimeError: no model for a"
    ]
    assert [e.kind for e in events][-2:] == ["task.failed", "board.finished"]
