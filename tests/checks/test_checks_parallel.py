"""`AllOf(parallel=True)`: the children run at once, the verdict is the first reason in
declared order, the children still running once it is known are cancelled, and the check's
deadline covers them all. Concurrency is shown by children that wait for each other (which
in order would never finish), not by timing."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from _checks_support import snapshot

from checks import AllOf, Assessment, check_from_config, run_check
from harness import SessionStateSnapshot
from harness.checkpoints import WorkProgress

pytestmark = pytest.mark.anyio


class Meeting:
    """A check that sets its own event, waits for the other's, then answers `reason`."""

    def __init__(self, mine: anyio.Event, other: anyio.Event, reason: str | None) -> None:
        self.mine, self.other, self.reason = mine, other, reason

    async def check(self, state: SessionStateSnapshot) -> str | None:
        self.mine.set()
        await self.other.wait()
        return self.reason

    def description(self) -> str:
        return "meets the other check"


class Answer:
    def __init__(self, reason: str | None, progress: WorkProgress | None = None) -> None:
        self.reason, self.progress = reason, progress
        self.asked = 0

    async def measure(self, state: SessionStateSnapshot) -> Assessment:
        self.asked += 1
        return Assessment(self.reason, self.progress)

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return (await self.measure(state)).reason

    def description(self) -> str:
        return "answers"


class Forever:
    cancelled = False

    async def check(self, state: SessionStateSnapshot) -> str | None:
        try:
            await anyio.sleep_forever()
        finally:
            Forever.cancelled = True
        return None  # pragma: no cover - never reached

    def description(self) -> str:
        return "never answers"


def pair(first: str | None, second: str | None) -> tuple[Meeting, Meeting]:
    a, b = anyio.Event(), anyio.Event()
    return Meeting(a, b, first), Meeting(b, a, second)


async def test_children_run_at_once() -> None:
    with anyio.fail_after(30):
        assert await AllOf(pair(None, None), parallel=True).check(snapshot()) is None


async def test_the_first_reason_in_declared_order_wins() -> None:
    """The second child answers first (the first waits for it), yet the verdict is the
    first child's reason, as in order."""
    with anyio.fail_after(30):
        reason = await AllOf(pair("first broke", "second broke"), parallel=True).check(snapshot())
    assert reason == "first broke"


async def test_once_the_verdict_is_known_the_rest_is_cancelled() -> None:
    Forever.cancelled = False
    with anyio.fail_after(30):
        reason = await AllOf([Answer("missing"), Forever()], parallel=True).check(snapshot())
    assert reason == "missing"
    assert Forever.cancelled


async def test_a_raising_child_fails_closed() -> None:
    class Raising:
        async def check(self, state: SessionStateSnapshot) -> str | None:
            raise RuntimeError("boom")

        def description(self) -> str:
            return "raises"

    reason = await AllOf([Answer(None), Raising()], parallel=True).check(snapshot())
    assert reason == "the completion check Raising failed with RuntimeError: boom"


async def test_the_deadline_covers_every_child() -> None:
    """A child that never answers is cut off by the check's own time limit: not complete."""
    verdict = await run_check(
        AllOf([Answer(None), Forever()], parallel=True), snapshot(), time_limit=0.05
    )
    assert verdict.reason == "the completion check AllOf did not finish within 0.05s"


async def test_measure_asks_every_child_and_sums_the_progress() -> None:
    """With progress asked for, a parallel AllOf waits for every child, as a sequential one
    asks every child."""
    children = [
        Answer(None, WorkProgress(2, 2, "tests")),
        Answer("one test fails", WorkProgress(3, 4, "tests")),
        Answer(None, WorkProgress(1, 1, "tests")),
    ]
    verdict = await run_check(AllOf(children, parallel=True, progress=True), snapshot())
    assert verdict.reason == "one test fails"
    assert verdict.progress == WorkProgress(6, 7, "tests")
    assert [c.asked for c in children] == [1, 1, 1]


def test_a_parallel_all_of_is_not_flattened_into_another() -> None:
    inner = AllOf([Answer(None), Answer(None)], parallel=True)
    outer = AllOf([Answer(None), inner])
    assert outer.checks[1] is inner
    assert len(AllOf([Answer(None), AllOf([Answer(None), Answer(None)])]).checks) == 3


def test_the_spec_key(tmp_path: Path) -> None:
    table = {
        "type": "all_of",
        "parallel": True,
        "checks": [{"type": "files", "paths": ["a"]}, {"type": "signal"}],
    }
    built = check_from_config(table, where="checks[0]")
    assert isinstance(built, AllOf)
    assert built.parallel
    assert not check_from_config({**table, "parallel": False}, where="checks[0]").parallel  # type: ignore[attr-defined]
