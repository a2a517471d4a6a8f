"""Engines run task attempts: `LocalEngine` in the board's own event loop, `RayEngine`
(``_ray.py``) on a Ray cluster. The board's state never leaves the board: an engine only runs
`execute_attempt` somewhere and hands its events and outcome back."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Protocol, runtime_checkable

from ._attempt import AttemptOutcome, AttemptSpec, Emit, execute_attempt


@runtime_checkable
class Engine(Protocol):
    """Where attempts run. `open()` spans the board's run (start a cluster connection, ...)."""

    @property
    def name(self) -> str: ...

    def open(self) -> AbstractAsyncContextManager[object]: ...

    async def run_attempt(self, spec: AttemptSpec, emit: Emit) -> AttemptOutcome:
        """Run the attempt to its outcome; hand each event (a transcript line) to `emit`."""
        ...


class LocalEngine:
    """Attempts run as tasks of the board's own event loop (asyncio or trio)."""

    name = "local"

    def open(self) -> AbstractAsyncContextManager[object]:
        return nullcontext()

    async def run_attempt(self, spec: AttemptSpec, emit: Emit) -> AttemptOutcome:
        return await execute_attempt(spec, emit)

    def __repr__(self) -> str:
        return "LocalEngine()"
