"""`WorkspaceWatch`: what a sensor or a feedback provider that asks "did the workspace or the
plan change?" remembers between turns (`NoProgressSensor`, `ToolUsageFeedback`).

In a run it reads the run's `WorkspaceMonitor` from where it last looked (a mark in the
monitor's log); read by hand outside a run, it walks the tree itself at each look. The plan
is the latest `harness.Plan` in the session store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness import Plan, SessionStateSnapshot

from ._fingerprint import WorkspaceScanner

if TYPE_CHECKING:
    from ._monitor import WorkspaceMonitor


class WorkspaceWatch:
    """Where one session's reader last looked at the workspace and at the plan."""

    __slots__ = ("_ignore", "_mark", "_monitor", "_names", "_plan", "_scanner")

    def __init__(self, ignore: tuple[str, ...]) -> None:
        self._names = ignore
        self._ignore = frozenset(ignore)
        self._monitor: WorkspaceMonitor | None = None
        self._scanner: WorkspaceScanner | None = None
        self._mark = 0
        self._plan: Any = None

    def attach(self, monitor: WorkspaceMonitor) -> None:
        """Read `monitor` (the run's) from now on instead of walking the tree."""
        self._monitor = monitor

    @property
    def watching(self) -> bool:
        """Whether a run's monitor is attached."""
        return self._monitor is not None

    def files_changed(self) -> bool:
        """Whether the monitor logged a change (outside the ignored names) since the last
        look; False without a monitor."""
        monitor = self._monitor
        return monitor is not None and monitor.changed_since(self._mark, self._ignore)

    @property
    def monitor(self) -> WorkspaceMonitor | None:
        """The run's monitor, once attached."""
        return self._monitor

    @property
    def ignore(self) -> frozenset[str]:
        """The names whose files do not count."""
        return self._ignore

    def plan_changed(self, snapshot: SessionStateSnapshot) -> bool:
        """Whether the plan in `snapshot` differs from the one at the last look."""
        return bool(snapshot.latest(Plan) != self._plan)

    def take_plan(self, snapshot: SessionStateSnapshot) -> bool:
        """Whether the plan changed since the last look; this is the new last look at it."""
        plan = snapshot.latest(Plan)
        if plan == self._plan:
            return False
        self._plan = plan
        return True

    def look(self, snapshot: SessionStateSnapshot) -> bool:
        """Whether the files or the plan changed since the last look; this is the new last
        look. The first look only sets where the next one starts from, unless a plan is
        already there (which counts as a change)."""
        changed = False
        monitor = self._monitor
        if monitor is not None:
            changed = monitor.changed_since(self._mark, self._ignore)
            self._mark = monitor.mark
        elif snapshot.workspace is not None:
            if self._scanner is None:
                self._scanner = WorkspaceScanner(snapshot.workspace, ignore=self._names)
            changed = self._scanner.scan()
        plan = snapshot.latest(Plan)
        if plan != self._plan:
            changed = True
            self._plan = plan
        return changed
