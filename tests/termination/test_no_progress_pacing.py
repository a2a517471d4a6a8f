"""When `NoProgressSensor` makes a turn wait for the watcher, counted on a fake watcher whose
events arrive when the test says (no timing): a turn far from the limit does not wait while
the watcher keeps up with the turns, and a change is still counted for the turn that made it,
or, where a batch of events cannot tell two turns apart, for the later one too (never early)."""

from __future__ import annotations

import os
import shutil
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from watchfiles import Change

from harness import SessionStateSnapshot
from termination import NoProgressSensor
from termination._monitor import WorkspaceMonitor


class FakeWatcher:
    """The parts of a `WorkspaceMonitor` the sensor reads. Writes and markers queue up in the
    order they happen; `catch_up()` hands over everything queued, as the watcher's thread
    would; `waits` counts the turns that asked to wait for it."""

    ignore: frozenset[str] = frozenset()

    def __init__(self) -> None:
        self.log: list[str] = []
        self.queue: list[tuple[str, Any]] = []
        self.arrivals: list[tuple[int, int]] = []
        self.token = 0
        self.waits: list[int] = []

    @property
    def mark(self) -> int:
        return len(self.log)

    @property
    def turn_end(self) -> int:
        return self.token

    def changed_since(self, mark: int, ignore: frozenset[str] | None = None) -> bool:
        return len(self.log) > mark

    def changed_between(self, start: int, end: int, ignore: frozenset[str]) -> bool:
        return end > start

    def post_marker(self) -> int:
        self.token += 1
        self.queue.append(("marker", self.token))
        return self.token

    def write(self, path: str) -> None:
        self.queue.append(("write", path))

    def catch_up(self) -> None:
        for kind, value in self.queue:
            if kind == "write":
                self.log.append(value)
            else:
                self.arrivals.append((value, len(self.log)))
        self.queue.clear()

    def position(self, token: int) -> int | None:
        return next((at for t, at in self.arrivals if t >= token), None)

    def batch_start(self, token: int) -> int | None:
        return self.position(token)  # events in order: a marker ends exactly its turn


def snapshot(turn: int) -> SessionStateSnapshot:
    """After `turn` turns of one tool call each."""
    return SessionStateSnapshot.standalone(None, turns=turn, tool_calls=turn, run_turns=turn)


def run(limit: int, writes: dict[int, str], *, model_keeps_up: bool) -> tuple[int, list[int]]:
    """Turns as the policy drives them, until the sensor halts: the turn it halted on, and
    the turns that waited. With `model_keeps_up`, the watcher hands over what was queued
    while the model answers (a model served over a network); otherwise nothing arrives
    unless a turn waits (a model that answers at once)."""
    watcher = FakeWatcher()
    sensor: Any = NoProgressSensor(limit=limit).bind()
    sensor.attach(watcher)
    sensor.start(snapshot(0))
    for turn in range(1, 50):
        if model_keeps_up:
            watcher.catch_up()
        sensor.tools_starting()
        if turn in writes:
            watcher.write(writes[turn])
        wait = sensor.wants_settled(snapshot(turn))
        watcher.post_marker()  # the monitor's refresh ends the turn
        if wait:
            watcher.waits.append(turn)
            watcher.catch_up()
        if sensor.read(snapshot(turn)).status == "halt":
            return turn, watcher.waits
    raise AssertionError("the sensor never halted")


def test_a_turn_far_from_the_limit_does_not_wait_while_the_watcher_keeps_up() -> None:
    """limit=8, a write on turn 3 that arrives only after its turn ended: turns 4 to 11 are
    still, so the sensor halts on turn 11, and only turn 11 (whose reading halts) waited."""
    halted, waits = run(8, {3: "a.txt"}, model_keeps_up=True)
    assert halted == 11
    assert waits == [11]


def test_a_write_counts_for_its_turn_when_the_model_outruns_the_watcher() -> None:
    """A model answering within the watcher's batches: a turn with tool calls waits, since
    the next turn's writes could otherwise share a batch with this turn's end; the write on
    turn 2 still counts for turn 2 (limit=3: turns 3, 4 and 5 are still)."""
    halted, waits = run(3, {2: "a.txt"}, model_keeps_up=False)
    assert halted == 5
    assert waits == [1, 2, 3, 4, 5]


def test_a_write_on_the_first_turn_counts_for_it_either_way() -> None:
    """limit=2 and a write on turn 1: turns 2 and 3 are still, whatever the model's pace."""
    assert run(2, {1: "a.txt"}, model_keeps_up=True)[0] == 3
    assert run(2, {1: "a.txt"}, model_keeps_up=False)[0] == 3


class SetWatcher(WorkspaceMonitor):
    """A real `WorkspaceMonitor` whose watcher is the test: the marker's rename and the writes
    queue up as events, and each batch is handed to the monitor's worker-thread code as a set
    (in a worker thread), as watchfiles hands them over. A batch ends where the test cuts it;
    nothing is handed over unless the test catches up or a turn waits for its marker."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, ())
        self.mode = "watch"
        self._scanner.scan_changes()  # the baseline
        self.batches: list[set[tuple[Change, str]]] = [set()]
        self.marked = anyio.Event()

    def _mark(self, token: int) -> None:
        self.batches[-1].add((Change.added, os.path.join(self._private, f"s{token}")))
        self.marked.set()

    def write(self, name: str) -> None:
        path = self.root / name
        path.write_text(name)
        self.batches[-1].add((Change.added, str(path)))

    def cut(self) -> None:
        """The events from now on go into the next batch."""
        self.batches.append(set())

    async def catch_up(self) -> None:
        batches, self.batches = self.batches, [set()]
        for batch in batches:
            await anyio.to_thread.run_sync(self._handle, batch)

    async def refresh_waiting(self) -> None:
        """The monitor's settling refresh, while the watcher hands over what it holds."""
        self.marked = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(partial(self.refresh, settle=True))
            await self.marked.wait()
            await self.catch_up()


async def run_in_batches(root: Path, limit: int, writes: dict[int, str], slow: set[int]) -> int:
    """Turns as the policy drives them, until the sensor halts: the turn it halted on. Each
    turn's end marker starts a new batch, so a turn's writes share a batch with the previous
    turn's end. The watcher catches up while the model answers the turns in `slow`; on the
    others the model answers at once, and nothing arrives unless the turn waits."""
    watcher = SetWatcher(root)
    try:
        sensor: Any = NoProgressSensor(limit=limit).bind()
        sensor.attach(watcher)
        sensor.start(snapshot(0))
        for turn in range(1, 50):
            if turn in slow:
                await watcher.catch_up()
            sensor.tools_starting()
            if turn in writes:
                watcher.write(writes[turn])
            watcher.cut()
            if sensor.wants_settled(snapshot(turn)):
                await watcher.refresh_waiting()
            else:
                await watcher.refresh(settle=False)
            if sensor.read(snapshot(turn)).status == "halt":
                return turn
        raise AssertionError("the sensor never halted")
    finally:
        shutil.rmtree(watcher._private)


@pytest.mark.anyio
async def test_a_write_sharing_a_batch_with_the_previous_turns_end_counts_for_its_turn(
    tmp_path: Path,
) -> None:
    """The model answers turn 2 before the watcher reported turn 1's end: the watcher hands
    over {turn 1's end, turn 2's write}, then {turn 2's end}. The write cannot be told apart
    between turns 1 and 2, so it counts for turn 2 as well: limit=2, turns 3 and 4 are still,
    and the sensor halts on turn 4, not on turn 3."""
    assert await run_in_batches(tmp_path, 2, {2: "a.txt"}, slow={1}) == 4


@pytest.mark.anyio
@pytest.mark.parametrize(("limit", "write_on", "halted"), [(2, 2, 4), (3, 1, 4)])
async def test_a_write_in_its_own_batch_counts_for_its_turn_only(
    tmp_path: Path, limit: int, write_on: int, halted: int
) -> None:
    """The watcher keeping up with every turn: a write comes after the previous turn's end
    was handed over, so it counts for its turn alone (limit=2 and a write on turn 2: the
    sensor halts on turn 4; limit=3 and a write on turn 1: on turn 4)."""
    slow = set(range(1, 50))
    assert await run_in_batches(tmp_path, limit, {write_on: "a.txt"}, slow=slow) == halted
