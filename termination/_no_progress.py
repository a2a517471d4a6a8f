"""`NoProgressSensor`: the workspace's files and the agent's plan stayed the same for N turns."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from attrs import field, frozen

from harness import ConfigurationError, SessionStateSnapshot
from harness.extend import SensorReading

from ._fingerprint import DEFAULT_IGNORE
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
    not progress. A turn that made tool calls and whose changes have not arrived yet waits for
    pending events before it is read (a write's event arrives a few milliseconds after it:
    counted for the next turn, it would trip the sensor a turn late); so does a turn whose
    reading would warn or halt. A turn without tool calls does not wait.
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
    __slots__ = ("_calls", "_config", "_started", "_still", "_watch")

    def __init__(self, config: NoProgressSensor) -> None:
        self._config = config
        self._watch = WorkspaceWatch(config.ignore)
        self._still = 0
        self._started = False
        self._calls = 0

    def attach(self, monitor: WorkspaceMonitor) -> None:
        self._watch.attach(monitor)

    def wants_settled(self, snapshot: SessionStateSnapshot) -> bool:
        """Whether this turn's reading would warn or halt unless a change is still in flight."""
        watch = self._watch
        if not watch.watching or not self._started or watch.plan_changed(snapshot):
            return False
        if watch.files_changed():
            return False
        if snapshot.tool_calls != self._calls:  # a tool may have written: its event may be due
            return True
        config = self._config
        return self._still + 1 >= (config.warn_at or config.limit)

    @property
    def name(self) -> str:
        return self._config.name

    def start(self, snapshot: SessionStateSnapshot) -> None:
        self._watch.look(snapshot)
        self._started = True
        self._calls = snapshot.tool_calls

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        if not self._started:  # used without start(): this first turn only sets the baseline
            self.start(snapshot)
            return SensorReading.ok()
        self._still = 0 if self._watch.look(snapshot) else self._still + 1
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
