"""The per-session side of feedback providers: triggers, asking, storing, bounding, delivering.

One `FeedbackRunner` lives in each policy session. After a turn the policy hands it the
snapshot; every provider whose trigger fired is asked, in declared order, and each piece of
feedback it gives is stored in the runner's history (see `statistics()`), rendered, cut to
`max_chars`, and returned as a tagged feedback message for the next request. A provider that
raises, or returns something other than `Feedback`, is logged (``feedback.provider_failed``)
and skipped; it never stops the run.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from attrs import evolve, frozen

from harness import ConfigurationError, Message, SessionStateSnapshot
from harness.extend import Clock, HistoryView, LibraryLogger, Limit, implements

from ._budget import Budget
from ._feedback import (
    Feedback,
    FeedbackContext,
    FeedbackProvider,
    FeedbackProviderConfig,
    FeedbackTrigger,
    ProviderBindsPerSession,
)
from ._sensors import StartsSession, WatchesWorkspace

if TYPE_CHECKING:
    from ._monitor import WorkspaceMonitor

log = LibraryLogger("termination.feedback")


@frozen
class FeedbackStatistics:
    """What the providers did in one session: the feedback given, oldest first, and per
    provider how often its trigger fired and how often it failed."""

    feedback: tuple[Feedback, ...]
    fired: Mapping[str, int]
    failures: Mapping[str, int]


def bound(text: str, max_chars: int) -> str:
    """`text`, cut to at most `max_chars` characters with a note saying how much was cut."""
    if len(text) <= max_chars:
        return text
    note = "\n[... feedback truncated: {} more characters]"
    keep = max_chars - len(note.format(len(text)))
    return text[:keep] + note.format(len(text) - keep)


class _Slot:
    """One provider's trigger state in one session."""

    __slots__ = (
        "calls_at_fire",
        "calls_at_spoke",
        "failures",
        "files",
        "fired",
        "mark",
        "monitor",
        "pattern",
        "provider",
        "time_at_fire",
        "trigger",
    )

    def __init__(self, config: FeedbackProviderConfig, now: float) -> None:
        provider = config.provider
        self.provider: FeedbackProvider = (
            provider.bind() if implements(provider, ProviderBindsPerSession) else provider
        )
        self.trigger: FeedbackTrigger = config.trigger
        self.calls_at_fire = 0
        self.calls_at_spoke = 0
        self.time_at_fire = now
        self.files: frozenset[str] | None = None
        self.fired = 0
        self.failures = 0
        # A glob read through the run's workspace monitor: its parts, and how far the
        # monitor's change log has been read.
        glob = config.trigger.file_appears if config.trigger.file_appears_glob else None
        self.pattern = PurePosixPath(glob).parts if glob is not None else None
        self.monitor: WorkspaceMonitor | None = None
        self.mark = 0

    @property
    def reads_workspace(self) -> bool:
        return self.pattern is not None or implements(self.provider, WatchesWorkspace)

    def attach(self, monitor: WorkspaceMonitor) -> None:
        if self.pattern is not None:
            self.monitor = monitor
        if implements(self.provider, WatchesWorkspace):
            self.provider.attach(monitor)

    def wants_settled(self, snapshot: SessionStateSnapshot) -> bool:
        if self.monitor is not None:
            return True  # whether the glob fires this turn depends on every file written
        provider = self.provider
        return implements(provider, WatchesWorkspace) and provider.wants_settled(snapshot)

    @property
    def name(self) -> str:
        return self.provider.name

    def matches(self, workspace: Path | None) -> frozenset[str]:
        pattern = self.trigger.file_appears
        assert pattern is not None
        if workspace is None:
            raise ConfigurationError(
                f"feedback provider {self.name!r} has a file_appears trigger but the run has "
                "no workspace"
            )
        if self.pattern is None:
            return frozenset({pattern}) if (workspace / pattern).exists() else frozenset()
        return frozenset(str(p.relative_to(workspace)) for p in workspace.glob(pattern))

    def appeared(self, workspace: Path | None) -> bool:
        """Whether a matching file appeared since the trigger last looked."""
        monitor = self.monitor
        if monitor is None:
            current = self.matches(workspace)
            appeared = self.files is not None and bool(current - self.files)
            self.files = current
            return appeared
        pattern = self.pattern
        assert pattern is not None
        new = [
            path
            for kind, path in monitor.since(self.mark)
            if kind == "added" and _glob_match(path.split("/"), pattern)
        ]
        self.mark = monitor.mark
        return any((monitor.root / path).exists() for path in new)  # and still there

    def due(self, snapshot: SessionStateSnapshot, now: float) -> bool:
        """Whether the trigger fires now; always refreshes what the file condition saw."""
        trigger = self.trigger
        appeared = bool(trigger.file_appears) and self.appeared(snapshot.workspace)
        calls = trigger.every_n_calls
        seconds = trigger.every_n_seconds
        return (
            appeared
            or (calls is not None and snapshot.tool_calls - self.calls_at_fire >= calls)
            or (seconds is not None and now - self.time_at_fire >= seconds)
        )


class FeedbackRunner:
    """Runs a policy's feedback providers for one session."""

    __slots__ = ("_budget", "_clock", "_history", "_limit", "_max_chars", "_slots", "_started")

    def __init__(
        self,
        configs: Sequence[FeedbackProviderConfig],
        *,
        budget: Budget,
        clock: Clock,
        limit: Limit | None,
        max_chars: int,
    ) -> None:
        now = clock.now()
        self._slots = [_Slot(c, now) for c in configs]
        self._budget = budget
        self._clock = clock
        self._limit = limit
        self._max_chars = max_chars
        self._history: list[Feedback] = []
        self._started = False

    def start(self, snapshot: SessionStateSnapshot) -> None:
        """Before the first model call: the baseline for file triggers and stateful providers."""
        self._started = True
        for slot in self._slots:
            if slot.monitor is not None:
                slot.mark = slot.monitor.mark
            elif slot.trigger.file_appears:
                slot.files = slot.matches(snapshot.workspace)
            if implements(slot.provider, StartsSession):
                slot.provider.start(snapshot)

    @property
    def reads_workspace(self) -> bool:
        """Whether a trigger or provider here reads the run's `WorkspaceMonitor`."""
        return any(slot.reads_workspace for slot in self._slots)

    def attach(self, monitor: WorkspaceMonitor) -> None:
        for slot in self._slots:
            slot.attach(monitor)

    def wants_settled(self, snapshot: SessionStateSnapshot) -> bool:
        return any(slot.wants_settled(snapshot) for slot in self._slots)

    def run(self, snapshot: SessionStateSnapshot) -> tuple[Message, ...]:
        """Ask every provider whose trigger fired; return their feedback as messages."""
        if not self._started:
            self.start(snapshot)
        now = self._clock.now()
        messages: list[Message] = []
        for slot in self._slots:
            if not slot.due(snapshot, now):
                continue
            slot.fired += 1
            slot.calls_at_fire = snapshot.tool_calls
            slot.time_at_fire = now
            feedback = self._ask(slot, snapshot)
            if feedback is None:
                continue
            feedback = evolve(
                feedback,
                provider_name=slot.name,
                turn=snapshot.turns,
                call_index=snapshot.tool_calls,
                at=now,
            )
            slot.calls_at_spoke = snapshot.tool_calls
            self._history.append(feedback)
            text = bound(feedback.render(), self._max_chars)
            messages.append(Message.feedback(f"feedback:{slot.name}", text))
        return tuple(messages)

    def _ask(self, slot: _Slot, snapshot: SessionStateSnapshot) -> Feedback | None:
        context = FeedbackContext(
            snapshot=snapshot,
            budget=self._budget,
            deadline=self._deadline(snapshot),
            tool_calls_since_last_feedback=snapshot.tool_calls - slot.calls_at_spoke,
            last_feedback=self._history[-1] if self._history else None,
            history=HistoryView(self._history),
        )
        stage = "should_run"
        try:
            wanted = slot.provider.should_run(context)
            _expect(wanted, bool, "a bool")
            if not wanted:
                return None
            stage = "provide"
            feedback = slot.provider.provide(context)
            _expect(feedback, Feedback, "a Feedback")
        except Exception as exc:
            slot.failures += 1
            log.warning(
                "feedback.provider_failed",
                provider=slot.name,
                stage=stage,
                error=f"{type(exc).__name__}: {exc}",
                run_id=snapshot.run_id,
                agent=snapshot.agent,
                turn=snapshot.turns,
            )
            return None
        return feedback

    def _deadline(self, snapshot: SessionStateSnapshot) -> float | None:
        deadline = snapshot.deadline
        wall = self._limit.wall_time if self._limit is not None else None
        if wall is not None:
            mine = snapshot.session_started_at + wall
            deadline = mine if deadline is None else min(deadline, mine)
        return deadline

    def statistics(self) -> FeedbackStatistics:
        return FeedbackStatistics(
            feedback=tuple(self._history),
            fired={s.name: s.fired for s in self._slots},
            failures={s.name: s.failures for s in self._slots},
        )

    def __repr__(self) -> str:
        names = ", ".join(s.name for s in self._slots)
        return f"FeedbackRunner([{names}], given={len(self._history)})"


def _glob_match(parts: Sequence[str], pattern: Sequence[str]) -> bool:
    """Whether a relative path's `parts` match a glob's, as `Path.glob` matches: ``*``, ``?``
    and ``[...]`` within one part, ``**`` for any number of folders."""
    if not pattern:
        return not parts
    head = pattern[0]
    if head == "**":
        return any(_glob_match(parts[i:], pattern[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], head) and _glob_match(parts[1:], pattern[1:])


def _expect(value: object, kind: type, what: str) -> None:
    if isinstance(value, kind):
        return
    if inspect.iscoroutine(value):
        value.close()  # never awaited: close it so no "never awaited" warning leaks
    raise TypeError(f"returned {type(value).__name__} instead of {what}")
