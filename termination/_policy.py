"""`TerminationPolicy`: budgets, then sensors, then (only on a claim of done) the check, then
feedback providers when the session goes on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from attrs import evolve, field, frozen

from checks import AlwaysComplete, CompletionCheck, PreparesForRun, run_check
from harness import (
    Completed,
    ConfigurationError,
    HaltReason,
    Message,
    RejectionLimit,
    SensorTripped,
    SessionStateSnapshot,
)
from harness.checkpoints import Assessment
from harness.extend import (
    CONTINUE,
    Clock,
    Decision,
    Limit,
    ProtectedPaths,
    SensorReading,
    check_positive,
    check_type,
    implements,
)

from ._budget import Budget
from ._sensors import (
    BindsPerSession,
    PacesTools,
    ReadsVerdicts,
    ReadsWorkspace,
    Sensor,
    StartsSession,
    WatchesWorkspace,
)

if TYPE_CHECKING:
    from harness.extend import Baseline

    from ._feedback import FeedbackProviderConfig
    from ._feedback_runner import FeedbackRunner, FeedbackStatistics
    from ._monitor import WorkspaceMonitor


def _sensors(value: Sequence[Sensor]) -> tuple[Sensor, ...]:
    items = tuple(value)
    for item in items:
        if not implements(item, Sensor):
            raise ConfigurationError(f"'sensors' must hold Sensor objects (got {item!r})")
    return items


def _feedback(value: Sequence[Any]) -> tuple[FeedbackProviderConfig, ...]:
    if isinstance(value, tuple | list) and not value:
        return ()
    # Loaded by a policy that has feedback providers: most runs have none.
    from ._feedback import FeedbackProviderConfig

    if isinstance(value, FeedbackProviderConfig):
        value = (value,)
    items = tuple(FeedbackProviderConfig.of(item) for item in value)
    seen: set[str] = set()
    for item in items:
        name = item.provider.name
        if name in seen:
            raise ConfigurationError(
                f"'feedback' has two providers named {name!r}; give one another name"
            )
        seen.add(name)
    return items


def _protected(value: ProtectedPaths | Sequence[str] | str) -> ProtectedPaths:
    return value if isinstance(value, ProtectedPaths) else ProtectedPaths(value)


def _check(value: object) -> CompletionCheck:
    if not implements(value, CompletionCheck):
        raise ConfigurationError(
            f"'completion_check' must have async check(state) and description() (got {value!r})"
        )
    return value


@frozen(kw_only=True)
class TerminationPolicy:
    """Decides after every turn whether the run goes on.

    Order, always: the budget (a used-up dimension halts and skips the check), then every
    sensor (a halt stops, a warning becomes feedback), then, only when the agent claims done,
    the completion check (None completes the run; a reason goes into the next turn). The
    check fails closed: an exception or `check_timeout` is a reason, never a pass. After
    `max_rejections` rejected claims the run halts with `RejectionLimit`; otherwise sensors
    that read verdicts (`ReadsVerdicts`) are read again with the new rejection. A check that
    cannot judge the work (it raised, or its command could not start) with the same error at
    `max_check_errors` claims in a row halts the run, `CheckBroken` (the run counts them, see
    `harness.extend.CheckError`); and `preflight` (before the first model call) refuses a
    check whose command's program cannot be found.

    Feedback providers come last and only when the session goes on (no halt, and no claim of
    done the check accepted or that ends the session): guidance for a turn that halts would
    never be read, and would use up its trigger for nothing. Every provider whose trigger
    fired runs, in declared order; each message is cut to `feedback_max_chars`. The next
    request carries sensor warnings, then provider feedback, then the check's reason. The
    feedback given in a session, whole and with its severity, is the policy session's
    `statistics().feedback`; each delivered message is also a ``feedback.injected`` event.

    Sensors and providers that read the workspace (`NoProgressSensor`, `ToolUsageFeedback`,
    a `file_appears` glob) share one `WorkspaceMonitor` per run, opened by `run_scope` (the
    `Harness` does this): a file watcher where one can run, a walk in a worker thread where
    not; never a walk on the event loop.
    """

    budget: Budget = field(factory=Budget)
    sensors: tuple[Sensor, ...] = field(default=(), converter=_sensors)
    completion_check: CompletionCheck = field(factory=AlwaysComplete, converter=_check)
    check_timeout: float | None = 600.0
    max_rejections: int | None = 10
    max_check_errors: int | None = 3
    check_before_first_turn: bool = False
    feedback: tuple[FeedbackProviderConfig, ...] = field(default=(), converter=_feedback)
    feedback_max_chars: int = 2000
    protected: ProtectedPaths = field(factory=ProtectedPaths, converter=_protected)
    # Which optional hooks the sensors and the check implement, asked once here: on Python
    # 3.11 each protocol check costs ~10 µs, and every run and session would ask again.
    _binds: tuple[bool, ...] = field(init=False, repr=False, eq=False)
    _starts: tuple[bool, ...] = field(init=False, repr=False, eq=False)
    _prepares: bool = field(init=False, repr=False, eq=False)
    _any_binds: bool = field(init=False, repr=False, eq=False)
    _starters: tuple[Sensor, ...] = field(init=False, repr=False, eq=False)
    # What the workspace monitor leaves out (None: nothing here reads the workspace), and
    # the monitors of the runs in progress, by run id.
    _watch_ignore: frozenset[str] | None = field(init=False, repr=False, eq=False)
    _monitors: dict[str, WorkspaceMonitor] = field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        check_positive("check_timeout", self.check_timeout, allow_none=True)
        check_positive("max_rejections", self.max_rejections, integer=True, allow_none=True)
        check_positive("max_check_errors", self.max_check_errors, integer=True, allow_none=True)
        check_type("check_before_first_turn", self.check_before_first_turn, bool, "True or False")
        size = self.feedback_max_chars
        if isinstance(size, bool) or not isinstance(size, int) or size < 200:
            raise ConfigurationError(f"'feedback_max_chars' must be an int >= 200 (got {size!r})")
        if not isinstance(self.budget, Budget):
            raise ConfigurationError(f"'budget' must be a Budget (got {self.budget!r})")
        binds = tuple(implements(s, BindsPerSession) for s in self.sensors)
        starts = tuple(implements(s, StartsSession) for s in self.sensors)
        object.__setattr__(self, "_binds", binds)
        object.__setattr__(self, "_starts", starts)
        object.__setattr__(self, "_any_binds", any(binds))
        starters = tuple(s for s, start in zip(self.sensors, starts, strict=True) if start)
        object.__setattr__(self, "_starters", starters)
        object.__setattr__(self, "_prepares", implements(self.completion_check, PreparesForRun))
        object.__setattr__(self, "_watch_ignore", self._workspace_ignore())
        object.__setattr__(self, "_monitors", {})

    def _workspace_ignore(self) -> frozenset[str] | None:
        """The names every workspace reader ignores (a file one of them cares about is
        watched), or None when none reads the workspace."""
        ignores = [set(s.workspace_ignore) for s in self.sensors if implements(s, ReadsWorkspace)]
        for config in self.feedback:
            if implements(config.provider, ReadsWorkspace):
                ignores.append(set(config.provider.workspace_ignore))
            if config.trigger.file_appears_glob:
                # Loaded here: the workspace fingerprints are for policies that watch files.
                from ._ignore import DEFAULT_IGNORE

                ignores.append(set(DEFAULT_IGNORE))
        return frozenset(set.intersection(*ignores)) if ignores else None

    @property
    def wall_time(self) -> float | None:
        return self.budget.max_wall_time

    @property
    def requires_known_cost(self) -> bool:
        budget = self.budget
        return budget.max_cost_usd is not None or budget.max_iteration_cost_usd is not None

    @property
    def bounded(self) -> bool:
        return self.budget.bounded

    def description(self) -> str:
        return self.completion_check.description()

    def preflight(self, workspace: Path | None) -> None:
        """Before the first model call: a `ConfigurationError` when the completion check
        cannot run at all (a command-based check's program is not on PATH, or a path outside
        the workspace that does not exist; one inside may be the agent's to create)."""
        preflight = getattr(self.completion_check, "preflight", None)
        if preflight is not None:
            preflight(workspace)

    async def start_run(self, snapshot: SessionStateSnapshot) -> tuple[Baseline | str, ...]:
        """Let the check record its baselines before the first turn; they are returned for
        the transcript. A check that prepares and returns none, unless it says it takes none
        (``baseline = False``), is named in a warning: a wrapper whose `prepare` forgets to
        return what it recorded would drop the baseline without a word."""
        if not self._prepares:
            return ()
        check = self.completion_check
        recorded = await check.prepare(snapshot)  # type: ignore[attr-defined]
        if recorded is None and getattr(check, "baseline", None) is not False:
            name = type(check).__name__
            return (
                f"the completion check {name} prepared for the run and returned None, so no "
                "baseline is recorded: a check that takes one returns it (a "
                "harness.extend.Baseline, or a tuple of them)",
            )
        return baselines_of(recorded)

    def run_scope(self, snapshot: SessionStateSnapshot) -> AbstractAsyncContextManager[object]:
        """Watch the run's workspace while the run lasts, when something here reads it."""
        if self._watch_ignore is None or snapshot.workspace is None:
            return nullcontext()
        return self._monitoring(snapshot.run_id, snapshot.workspace, self._watch_ignore)

    @asynccontextmanager
    async def _monitoring(
        self, run_id: str, workspace: Path, ignore: frozenset[str]
    ) -> AsyncIterator[None]:
        # Imported here: its threads and watcher are for runs that read the workspace.
        from ._monitor import open_workspace_monitor

        async with open_workspace_monitor(workspace, ignore=ignore) as monitor:
            self._monitors[run_id] = monitor
            try:
                yield
            finally:
                del self._monitors[run_id]

    def monitor(self, run_id: str) -> WorkspaceMonitor | None:
        """The workspace monitor of run `run_id` while it runs (None without one)."""
        return self._monitors.get(run_id)

    def start_session(self, *, clock: Clock, limit: Limit | None = None) -> _PolicySession:
        return _PolicySession(self, clock, limit)


class _PolicySession:
    """The policy's state for one session: bound sensors, feedback triggers and history."""

    __slots__ = (
        "_check",
        "_clock",
        "_feedback",
        "_limit",
        "_monitor",
        "_pacing",
        "_policy",
        "_rejections",
        "_sensors",
        "_started",
        "_starting",
        "_watching",
    )

    def __init__(self, policy: TerminationPolicy, clock: Clock, limit: Limit | None) -> None:
        self._policy = policy
        self._clock = clock
        self._limit = limit
        self._check = policy.completion_check
        # Rejected claims of done, counted here: the run's check_reasons also hold checks that
        # judged no claim (the look before the first turn, Ralph's check between iterations).
        self._rejections = 0
        if policy._any_binds:
            self._sensors: tuple[Sensor, ...] = tuple(
                s.bind() if binds else s  # type: ignore[attr-defined]
                for s, binds in zip(policy.sensors, policy._binds, strict=True)
            )
            # The sensors with a baseline to record: a bound sensor is a new object, asked here.
            self._starting: tuple[Any, ...] = tuple(
                sensor
                for sensor, binds, starts in zip(
                    self._sensors, policy._binds, policy._starts, strict=True
                )
                if (implements(sensor, StartsSession) if binds else starts)
            )
        else:  # stateless sensors serve every session as they are
            self._sensors = policy.sensors
            self._starting = policy._starters
        # Without providers there is nothing to run: no runner, and nothing for it to hold.
        self._feedback: FeedbackRunner | None = None
        if policy.feedback:
            from ._feedback_runner import FeedbackRunner

            self._feedback = FeedbackRunner(
                policy.feedback,
                budget=policy.budget,
                clock=clock,
                limit=limit,
                max_chars=policy.feedback_max_chars,
            )
        self._started = False
        self._monitor: WorkspaceMonitor | None = None
        self._watching: tuple[WatchesWorkspace, ...] = ()
        self._pacing: tuple[PacesTools, ...] = ()

    def _start(self, snapshot: SessionStateSnapshot) -> None:
        """Before the session's first model call: baselines for sensors and triggers."""
        self._started = True
        policy = self._policy
        if policy._monitors:
            self._attach(policy._monitors.get(snapshot.run_id))
        for sensor in self._starting:
            sensor.start(snapshot)
        if self._feedback is not None:
            self._feedback.start(snapshot)

    def _attach(self, monitor: WorkspaceMonitor | None) -> None:
        """Hand the run's workspace monitor to the sensors and triggers that read it."""
        if monitor is None:
            return
        watching: list[WatchesWorkspace] = [
            s for s in self._sensors if implements(s, WatchesWorkspace)
        ]
        if self._feedback is not None and self._feedback.reads_workspace:
            watching.append(self._feedback)
        for reader in watching:
            reader.attach(monitor)
        self._monitor = monitor if watching else None
        self._watching = tuple(watching)
        self._pacing = tuple(r for r in watching if implements(r, PacesTools))

    async def _refresh(self, snapshot: SessionStateSnapshot) -> None:
        """Bring the workspace monitor up to this turn's end before anything reads it."""
        assert self._monitor is not None
        settle = any(reader.wants_settled(snapshot) for reader in self._watching)
        await self._monitor.refresh(settle=settle)

    def statistics(self) -> FeedbackStatistics:
        """The feedback this session's providers gave, oldest first, and their counts."""
        if self._feedback is None:
            from ._feedback_runner import FeedbackStatistics

            return FeedbackStatistics(feedback=(), fired={}, failures={})
        return self._feedback.statistics()

    def __repr__(self) -> str:
        names = ", ".join(s.name for s in self._sensors)
        feedback = self._feedback if self._feedback is not None else "FeedbackRunner([], given=0)"
        return f"PolicySession(sensors=[{names}], {feedback!s})"

    def before_call(self, snapshot: SessionStateSnapshot) -> HaltReason | None:
        if not self._started:
            self._start(snapshot)
        halt = self._policy.budget.exceeded(snapshot, scope="run")
        if halt is None and self._limit is not None:
            halt = self._limit.exceeded(snapshot, scope="session")
        return halt

    def before_tool_call(
        self, snapshot: SessionStateSnapshot, *, pending: int = 0
    ) -> HaltReason | None:
        if not pending:
            for reader in self._pacing:
                reader.tools_starting()
        halt = self._policy.budget.exceeded(snapshot, scope="run", tools_only=True, pending=pending)
        if halt is None and self._limit is not None:
            halt = self._limit.exceeded(snapshot, scope="session", tools_only=True, pending=pending)
        return halt

    async def after_turn(self, snapshot: SessionStateSnapshot, *, run_check: bool) -> Decision:
        halt = self.before_call(snapshot)
        if halt is not None:
            return Decision(halt=halt)
        if self._monitor is not None:
            await self._refresh(snapshot)
        readings: list[SensorReading] = []
        feedback: list[Message] = []
        tripped = _read(self._sensors, snapshot, readings, feedback)
        if tripped is not None:
            return Decision(halt=tripped, readings=tuple(readings))
        runner = self._feedback  # None without providers (asking would cost a clock read)
        if not run_check:
            if not snapshot.claims_done and runner is not None:
                feedback.extend(runner.run(snapshot))
            if not readings and not feedback:
                return CONTINUE
            return Decision(readings=tuple(readings), feedback=tuple(feedback))
        assessed = await self.assess(snapshot)
        reason = assessed.reason
        if reason is None:
            return Decision(
                halt=Completed(),
                readings=tuple(readings),
                feedback=tuple(feedback),
                checked=True,
                progress=assessed.progress,
                flaky=assessed.flaky,
            )
        self._rejections += 1
        rejections = self._rejections
        cap = self._policy.max_rejections
        halt = RejectionLimit(rejections, reason) if cap is not None and rejections >= cap else None
        if halt is None:
            halt = self._read_verdicts(snapshot, reason, readings, feedback)
        if halt is None and runner is not None:
            feedback.extend(runner.run(snapshot))
        return Decision(
            halt=halt,
            readings=tuple(readings),
            feedback=tuple(feedback),
            checked=True,
            rejection=reason,
            progress=assessed.progress,
            error=assessed.error,
            flaky=assessed.flaky,
        )

    def _read_verdicts(
        self,
        snapshot: SessionStateSnapshot,
        reason: str,
        readings: list[SensorReading],
        feedback: list[Message],
    ) -> HaltReason | None:
        """Read the sensors that watch the check, with the rejection's `reason`."""
        watchers = [s for s in self._sensors if implements(s, ReadsVerdicts)]
        if not watchers:
            return None
        return _read(watchers, snapshot, readings, feedback, rejection=reason)

    async def check(self, snapshot: SessionStateSnapshot) -> str | None:
        return (await self.assess(snapshot)).reason

    async def assess(self, snapshot: SessionStateSnapshot) -> Assessment:
        verdict = await run_check(
            self._check, snapshot, time_limit=self._policy.check_timeout, clock=self._clock
        )
        return Assessment(verdict.reason, verdict.progress, verdict.error, verdict.flaky)


def _read(
    sensors: Sequence[Any],
    snapshot: SessionStateSnapshot,
    readings: list[SensorReading],
    feedback: list[Message],
    *,
    rejection: str | None = None,
) -> HaltReason | None:
    """Read `sensors` in order, collecting warnings; the first halt stops and is returned.

    With `rejection`, the sensors are read with `read_verdict`, given the check's reason."""
    for sensor in sensors:
        reading = (
            sensor.read(snapshot) if rejection is None else sensor.read_verdict(snapshot, rejection)
        )
        if reading.status == "ok":
            continue
        reading = evolve(reading, sensor=sensor.name)
        readings.append(reading)
        if reading.status == "halt":
            return SensorTripped(sensor.name, reading.message)
        feedback.append(Message.feedback(f"sensor:{sensor.name}", reading.message))
    return None


def baselines_of(recorded: object) -> tuple[Baseline, ...]:
    """What a check's `prepare` returned, as baselines: one, several, or none."""
    # Loaded here: only a run whose check prepares needs the verifier's records.
    from harness.extend import Baseline

    if isinstance(recorded, Baseline):
        return (recorded,)
    if isinstance(recorded, tuple | list):
        return tuple(b for b in cast(Sequence[object], recorded) if isinstance(b, Baseline))
    return ()
