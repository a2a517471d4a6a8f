"""`RayAttempts`: a best-of run's attempts as Ray tasks, each worker in a checkout of its own.

`BestOf(engine=RayAttempts())` runs each attempt on a Ray worker instead of in the run's
process. The attempt's workspace is still made where the run started (a worktree or a copy,
as without Ray); its files (``.git`` left out) are packed and shipped with the attempt's
model, policy, tools and strategy to the worker, which unpacks them into a temporary folder
of its own, runs the attempt there, and sends back its `RunResult`, its events and the files
it wrote or deleted. Those are laid into the attempt's local workspace, its events reach the
run's sinks inside ``attempt.event`` as they would have, and the rest (what it changed, the
ranking, the digest, the winner applied after the final check in the user's workspace) is as
for a local attempt. The worker's folder is removed when its attempt ends.

Where: ``address`` (or ``RAY_ADDRESS``) names a running cluster; with none, a Ray instance
already started in the process is used, or a local one starts for the run and stops after
it. The package must be installed on the workers (or shipped with a ``runtime_env`` in
`init_options`). An attempt cancelled while it runs on a worker (another was verified first,
the run's deadline) is cancelled there too, and reports no events.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from attrs import frozen

from harness import Harness, RunResult, Tool
from harness.events import Event, ListSink
from harness.extend import Clock, ModelClient, Policy, Strategy

from ._ray_instance import RayTasks, import_ray

POLL = 0.2
"""Seconds between looks at a running attempt (and at its cancel token)."""


@frozen
class RemoteAttempt:
    """What a worker needs to run one attempt: the task, the packed workspace (`files`, a
    gzipped tar) and the harness's parts."""

    number: int
    task: str
    files: bytes
    model: ModelClient
    policy: Policy
    tools: tuple[Tool, ...]
    strategy: Strategy
    clock: Clock
    system_prompt: str | None
    tool_timeout: float
    done_tool: bool
    context_window: int | None


@frozen
class RemoteOutcome:
    """What the worker sends back: the attempt's result and events, and its files written
    (path -> bytes) or `deleted`, relative to the workspace; `worker` is where it ran
    (``host:pid``)."""

    result: RunResult
    events: tuple[Event, ...]
    written: Mapping[str, bytes]
    deleted: tuple[str, ...]
    worker: str


def _import_ray() -> Any:
    return import_ray("RayAttempts")


class RayAttempts(RayTasks):
    """Run a best-of run's attempts as Ray tasks (see the module docstring)."""

    name = "ray"
    user = "RayAttempts"

    def open(self) -> AbstractAsyncContextManager[RayAttempts]:
        return self._open()

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[RayAttempts]:
        async with self._remote_open(run_on_worker):
            yield self

    async def run(self, job: RemoteAttempt, cancelled: Callable[[], bool]) -> RemoteOutcome | None:
        """Run `job` on a worker; None when `cancelled()` turned true first (the worker's
        task is cancelled too). A worker's failure raises, as a local attempt's would."""
        if self._remote is None:
            raise RuntimeError("RayAttempts is not open (BestOf opens it for its run)")
        ray = _import_ray()
        ref = self._remote.remote(job)
        done = False
        try:
            while True:
                ready, _ = await anyio.to_thread.run_sync(
                    lambda: ray.wait([ref], timeout=POLL), abandon_on_cancel=True
                )
                if ready:
                    done = True
                    outcome: RemoteOutcome = await anyio.to_thread.run_sync(ray.get, ref)
                    return outcome
                if cancelled():
                    return None
        finally:
            if not done:
                ray.cancel(ref, force=True)


async def pack(folder: Path) -> bytes:
    """`folder`'s files (``.git`` left out), as a gzipped tar."""
    return await anyio.to_thread.run_sync(_pack, folder)


def _pack(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname=".", filter=lambda info: None if _in_git(info.name) else info)
    return buffer.getvalue()


def _in_git(name: str) -> bool:
    return ".git" in Path(name).parts


async def lay_into(folder: Path, outcome: RemoteOutcome) -> None:
    """Write the files the worker's attempt wrote into `folder`, and delete those it
    deleted (paths that would leave `folder` are refused)."""
    await anyio.to_thread.run_sync(_lay_into, folder, outcome)


def _lay_into(folder: Path, outcome: RemoteOutcome) -> None:
    root = folder.resolve()
    for relative, data in outcome.written.items():
        target = _inside(root, relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    for relative in outcome.deleted:
        _inside(root, relative).unlink(missing_ok=True)


def _inside(root: Path, relative: str) -> Path:
    target = (root / relative).resolve()
    if not target.is_relative_to(root) or target == root:
        raise ValueError(f"a worker's file {relative!r} would leave the attempt's workspace")
    return target


def run_on_worker(job: RemoteAttempt) -> RemoteOutcome:
    """On a worker: unpack the workspace into a folder of its own, run the attempt there
    (on asyncio), and collect what it wrote and deleted."""
    import socket

    folder = Path(tempfile.mkdtemp(prefix=f"harness-attempt-{job.number}-"))
    try:
        if job.files:
            with tarfile.open(fileobj=io.BytesIO(job.files), mode="r:gz") as tar:
                tar.extractall(folder, filter="data")
        before = _snapshot(folder)
        sink = ListSink()
        harness = Harness(
            model=job.model,
            policy=job.policy,
            tools=list(job.tools),
            strategy=job.strategy,
            workspace=folder,
            system_prompt=job.system_prompt,
            clock=job.clock,
            sinks=[sink],
            tool_timeout=job.tool_timeout,
            done_tool=job.done_tool,
            context_window=job.context_window,
        )
        result = anyio.run(harness.run, job.task)
        after = _snapshot(folder)
        written = {p: (folder / p).read_bytes() for p, d in after.items() if before.get(p) != d}
        deleted = tuple(sorted(p for p in before if p not in after))
        where = f"{socket.gethostname()}:{os.getpid()}"
        return RemoteOutcome(result, tuple(sink.events), written, deleted, where)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Each regular file under `folder` (``.git`` and caches left out): its content's hash."""
    found: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if _in_git(str(relative)) or "__pycache__" in relative.parts:
            continue
        if path.is_file() and not path.is_symlink():
            found[relative.as_posix()] = hashlib.sha256(path.read_bytes()).digest()
    return found
