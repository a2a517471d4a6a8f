"""`NoProgressSensor`: the workspace's files and the agent's plan stayed the same for N turns."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from attrs import field, frozen

from harness import ConfigurationError, SessionStateSnapshot
from harness.extend import SensorReading

from ._ignore import DEFAULT_IGNORE
from ._sensors import Action, _threshold, check_action, check_name, graded
from ._workspace_watch import WorkspaceWatch

if TYPE_CHECKING:
    from ._monitor import WorkspaceMonitor


def _names(value: Iterable[str] | str) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
        raise ConfigurationError(
            f"NoProgressSensor: 'ignore' must be a list of file or folder names (got {value!r})"
        )
    return tuple(value)


@frozen
class NoProgressSensor:
    """Trips when neither the workspace's file contents nor the plan changed for `limit` turns.

    In a run, the workspace is read through the run's `WorkspaceMonitor` (a file watcher, or
    a walk in a worker thread): a turn costs what changed, and files written by any process
    count. A file is hashed only where its stat moved, so rewriting it with the same bytes is
    not progress. A write's event arrives a few milliseconds after it, so each turn's end is
    marked in the watcher's own queue and a change is counted for the turn that made it once
    that mark arrived. The watcher hands over its events in batches, each a set without
    order, so a change that cannot be told apart between two turns counts for the later one:
    when the batch that brings a turn's end arrived after the next turn's tool calls started,
    its changes count for that next turn as well. The sensor never trips early. It trips late
    only when the model answered before the watcher reported the previous turn's end: by one
    turn, or by as many as the turn ends that batch held (a model answering at once several
    turns in a row). Only a turn whose reading could warn or halt, or whose tool calls
    started before the watcher reported the previous turn's end, waits for the events still
    in flight.
    Files and folders named in `ignore` (``.git`` and tool caches by default) are skipped. The
    plan is the latest `harness.Plan` in the session store. Per-session memory: the policy
    binds a fresh instance to every session, and the baseline is taken before the session's
    first model call. Read by hand outside a run, it walks the tree itself at each read.
    """

    limit: int = 8
    warn_at: int | None = None
    name: str = "no_progress"
    action: Action = "halt"
    ignore: tuple[str, ...] = field(default=DEFAULT_IGNORE, converter=_names)

    def __attrs_post_init__(self) -> None:
        _threshold("NoProgressSensor", self.limit, self.warn_at, minimum=1)
        check_action("NoProgressSensor", self.action)
        check_name("NoProgressSensor", self.name)

    @property
    def workspace_ignore(self) -> tuple[str, ...]:
        return self.ignore

    def bind(self) -> _BoundNoProgress:
        return _BoundNoProgress(self)

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        raise ConfigurationError(
            "NoProgressSensor keeps per-session memory: read the instance bind() returns "
            "(TerminationPolicy does this for you)"
        )


class _BoundNoProgress:
    """In a run, each turn ends at a marker in the watcher's queue (`WorkspaceMonitor.
    turn_end`). A turn is settled once its marker arrived: every write made before the turn
    ended is logged before the marker's position, so whether the turn changed the workspace
    is known. Turns whose markers have not arrived are pending; a change logged after the
    last settled turn counts, until they settle, for the earliest pending one, so the count
    is an upper bound: writes not logged yet can only lower it.

    The watcher hands over a batch of events as a set, so a change that cannot be told apart
    between two turns counts for the later one. A batch with several markers logs its
    changes after all but its last (`WorkspaceMonitor.position`). A turn whose tool calls
    started before the watcher handled the previous turn's end (`tools_starting`) may have
    written before that end was handled: the changes of the batch that brought it
    (`WorkspaceMonitor.batch_start`) count for this turn too, besides the turn they were
    logged for. Counting a change for two turns can only make the sensor trip later, never
    earlier, and only in that race: by one turn, or by as many as the turn ends that batch
    held.

    A turn waits for its marker (the events still in flight) in two cases only. Its reading
    could warn or halt: the wait settles every pending turn. Or it made tool calls that
    started before the watcher handled the previous turn's end: the model answers faster
    than the watcher, so the next answer may too, and a wait keeps this turn's end out of
    the batch holding the next turn's writes. A model that takes longer than the watcher's
    few milliseconds (any model served over a network) makes no other turn wait."""

    __slots__ = (
        "_behind",
        "_calls",
        "_config",
        "_end",
        "_last",
        "_pending",
        "_settled",
        "_started",
        "_still",
        "_watch",
    )

    def __init__(self, config: NoProgressSensor) -> None:
        self._config = config
        self._watch = WorkspaceWatch(config.ignore)
        self._still = 0
        self._started = False
        self._calls = 0
        self._end = 0  # the log position where the last settled turn ended
        self._settled = 0  # settled turns since the last change
        # (marker token, the plan changed, the marker whose batch also counts for it, or 0)
        self._pending: list[tuple[int, bool, int]] = []
        self._last = 0  # the marker of the previous turn's end (or of the session's start)
        self._behind = False  # that marker had not arrived when this turn's tools started

    def attach(self, monitor: WorkspaceMonitor) -> None:
        self._watch.attach(monitor)

    def wants_settled(self, snapshot: SessionStateSnapshot) -> bool:
        """Whether this turn's reading could warn or halt unless a change is still in flight,
        or its writes could not be placed in it without a wait (see the class)."""
        watch = self._watch
        monitor = watch.monitor
        if monitor is None or not self._started or watch.plan_changed(snapshot):
            return False
        config = self._config
        if self._count(pending=1) >= (config.warn_at or config.limit):
            return True
        return self._outran(snapshot)

    def _outran(self, snapshot: SessionStateSnapshot) -> bool:
        """Whether this turn made tool calls that started before the watcher handled the
        previous turn's end (the marker `_last`)."""
        return snapshot.tool_calls != self._calls and self._behind

    def tools_starting(self) -> None:
        """Before the turn's first tool call: whether the watcher has handled the previous
        turn's end yet (not when the model answered faster than the watcher's batches)."""
        monitor = self._watch.monitor
        self._behind = monitor is not None and monitor.position(self._last) is None

    def _count(self, *, pending: int = 0) -> int:
        """Still turns, at most, with `pending` more turns not yet refreshed."""
        monitor = self._watch.monitor
        assert monitor is not None
        ignore = self._watch.ignore
        turns = self._pending
        done = 0
        for token, plan, shared in turns:
            end = monitor.position(token)
            if end is None:
                break
            start = self._end
            # The batch that brought the previous turn's end may hold this turn's writes.
            shared_start = monitor.batch_start(shared) if shared else None
            if shared_start is not None:
                start = min(start, shared_start)
            files = monitor.changed_between(start, end, ignore)
            self._settled = 0 if plan or files else self._settled + 1
            self._end = end
            done += 1
        del turns[:done]
        plans = [i for i, (_, plan, _) in enumerate(turns) if plan]
        if plans:  # the plan changed on a pending turn: only the turns after it count
            return len(turns) - 1 - plans[-1] + pending
        unsettled = len(turns) + pending
        if unsettled and monitor.changed_between(self._end, monitor.mark, ignore):
            return unsettled - 1  # for the earliest unsettled turn
        return self._settled + unsettled

    @property
    def name(self) -> str:
        return self._config.name

    def start(self, snapshot: SessionStateSnapshot) -> None:
        watch = self._watch
        watch.look(snapshot)
        self._started = True
        self._calls = snapshot.tool_calls
        monitor = watch.monitor
        if monitor is not None:
            self._end = monitor.mark
            self._last = monitor.post_marker()

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        if not self._started:  # used without start(): this first turn only sets the baseline
            self.start(snapshot)
            return SensorReading.ok()
        watch = self._watch
        monitor = watch.monitor
        if monitor is None:  # read by hand: a walk at each read
            self._still = 0 if watch.look(snapshot) else self._still + 1
        else:
            end = monitor.turn_end
            shared = self._last if self._outran(snapshot) else 0
            self._pending.append((end, watch.take_plan(snapshot), shared))
            # What the next turn tells about the watcher's pace: a marker not yet handled.
            self._last = end if monitor.position(end) is None else monitor.post_marker()
            self._still = self._count()
        self._calls = snapshot.tool_calls
        still = self._still
        config = self._config
        return graded(
            still,
            limit=config.limit,
            warn_at=config.warn_at,
            action=config.action,
            halt=lambda: f"the workspace and the plan have not changed for {still} turns",
            warn=lambda: (
                f"Nothing in the workspace or your plan has changed for {still} turns. "
                "Make a concrete change toward the task, or rethink your approach."
            ),
        )

    def __repr__(self) -> str:
        return f"NoProgressSensor(bound, still_turns={self._still}, limit={self._config.limit})"
