"""The bench's backend shim: the one place outside the harness that names asyncio and trio.

Each backend offers its own native primitives (run, sleep, a task group), so the bare loop
is written once and runs on either backend without anyio's layer in between; the harness
sessions are started with the same primitives, so the two differ only in the session code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import trio
from attrs import frozen

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[None]]


async def _asyncio_all(jobs: Sequence[Callable[[], Awaitable[object]]]) -> None:
    async with asyncio.TaskGroup() as group:
        for job in jobs:
            group.create_task(_as_coroutine(job))


async def _as_coroutine(job: Callable[[], Awaitable[object]]) -> None:
    await job()


async def _trio_all(jobs: Sequence[Callable[[], Awaitable[object]]]) -> None:
    async with trio.open_nursery() as nursery:
        for job in jobs:
            nursery.start_soon(_as_coroutine, job)


def _asyncio_run(main: Callable[[], Awaitable[T]]) -> T:
    async def wrapped() -> T:
        return await main()

    return asyncio.run(wrapped())


def _trio_run(main: Callable[[], Awaitable[T]]) -> T:
    async def wrapped() -> T:
        return await main()

    return trio.run(wrapped)


@frozen
class Backend:
    """An event loop: how to run a program on it, sleep, and wait for many jobs at once."""

    name: str
    sleep: Sleep
    run_all: Callable[[Sequence[Callable[[], Awaitable[object]]]], Awaitable[None]]
    _runner: Callable[[Callable[[], Awaitable[object]]], object]

    def run(self, main: Callable[[], Awaitable[T]]) -> T:
        result: T = self._runner(main)  # type: ignore[assignment]
        return result


BACKENDS: dict[str, Backend] = {
    "asyncio": Backend("asyncio", asyncio.sleep, _asyncio_all, _asyncio_run),
    "trio": Backend("trio", trio.sleep, _trio_all, _trio_run),
}
