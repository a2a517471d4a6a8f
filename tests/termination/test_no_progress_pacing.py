"""When `NoProgressSensor` makes a turn wait for the watcher, counted on a fake watcher whose
events arrive when the test says (no timing): a turn far from the limit does not wait while
the watcher keeps up with the turns, and a change is still counted for the turn that made it."""

from __future__ import annotations

from typing import Any

from harness import SessionStateSnapshot
from termination import NoProgressSensor


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
