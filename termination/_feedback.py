"""Feedback providers: soft guidance during a run, delivered with the next model request.

A provider is an observer with a `name`, a `should_run(context)` filter and a
`provide(context)` that returns `Feedback`. A `FeedbackTrigger` says when the policy asks it
(every N tool calls, every N seconds on the run's clock, when a file appears in the
workspace: any one of them, OR'd; a trigger with none never fires). `FeedbackContext` is
what a provider may read. Both methods are synchronous: they read an in-memory snapshot, and
anything slow enough to need awaiting belongs in a completion check or a tool.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args, runtime_checkable

from attrs import field, frozen

from harness import ConfigurationError, SessionStateSnapshot
from harness.extend import check_positive

from ._budget import Budget

if TYPE_CHECKING:
    from harness.extend import ToolOutcome

Severity = Literal["info", "caution", "warning"]
SEVERITIES: tuple[str, ...] = get_args(Severity)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_GLOB = frozenset("*?[")


def _strings(value: Sequence[str]) -> tuple[str, ...]:
    items = (value,) if isinstance(value, str) else tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise ConfigurationError(f"'suggestions' must hold strings (got {item!r})")
    return items


@frozen
class Observation:
    """One labelled fact a provider noticed, rendered as ``- label: value``."""

    label: str
    value: str


def _observations(value: Sequence[Observation]) -> tuple[Observation, ...]:
    items = tuple(value)
    for item in items:
        if not isinstance(item, Observation):
            raise ConfigurationError(f"'observations' must hold Observation objects (got {item!r})")
    return items


@frozen
class Feedback:
    """What a provider has to say: a summary, observations, suggestions and a severity.

    ``info`` is a routine update, ``caution`` an important reminder, ``warning`` urgent.
    The policy fills in `turn`, `call_index` (the session's tool calls so far) and `at`
    (the run's clock) when it stores the feedback.
    """

    provider_name: str
    summary: str
    observations: tuple[Observation, ...] = field(default=(), converter=_observations)
    suggestions: tuple[str, ...] = field(default=(), converter=_strings)
    severity: Severity = "info"
    turn: int = 0
    call_index: int = 0
    at: float = 0.0

    def __attrs_post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ConfigurationError(
                f"'severity' must be one of {list(SEVERITIES)} (got {self.severity!r})"
            )
        if not isinstance(self.summary, str):
            raise ConfigurationError(f"'summary' must be a string (got {self.summary!r})")

    def render(self) -> str:
        """The text the agent reads: a header, the summary, observations, then suggestions."""
        parts = [f"[Feedback - {self.provider_name}]", self.summary.strip()]
        if self.observations:
            parts.append("\n".join(f"- {o.label}: {o.value}" for o in self.observations))
        if self.suggestions:
            parts.append("\n".join(f"→ {s}" for s in self.suggestions))
        return "\n\n".join(p for p in parts if p)


@frozen(eq=False)
class FeedbackContext:
    """What a provider may read when its trigger fires.

    `snapshot` is the session as the turn left it. `deadline` is the nearer of the run's
    and the session's wall-time deadlines (on the run's clock), or None. Counters are the
    current session's. `tool_calls_since_last_feedback` counts from the last time *this*
    provider spoke; `last_feedback` is the latest any provider gave in this session, and
    `history` all of it, oldest first.
    """

    snapshot: SessionStateSnapshot
    budget: Budget
    deadline: float | None
    tool_calls_since_last_feedback: int
    last_feedback: Feedback | None
    history: Sequence[Feedback]

    @property
    def tool_call_count(self) -> int:
        return self.snapshot.tool_calls

    @property
    def now(self) -> float:
        return self.snapshot.now

    @property
    def remaining_time(self) -> float | None:
        """Seconds until `deadline`, or None without one."""
        return None if self.deadline is None else self.deadline - self.snapshot.now

    def recent_tool_calls(self, n: int) -> Sequence[ToolOutcome]:
        """The session's last `n` tool calls with their results, oldest first."""
        return self.snapshot.tool_outcomes[-n:] if n > 0 else ()


@runtime_checkable
class FeedbackProvider(Protocol):
    """Observes the trajectory and gives guidance when its trigger fires."""

    @property
    def name(self) -> str: ...

    def should_run(self, context: FeedbackContext) -> bool:
        """A filter after the trigger: False means nothing to say this time."""
        ...

    def provide(self, context: FeedbackContext) -> Feedback: ...


@runtime_checkable
class ProviderBindsPerSession(Protocol):
    """A provider with per-session memory: `bind` returns a fresh instance for one session."""

    def bind(self) -> FeedbackProvider: ...


@frozen(kw_only=True)
class FeedbackTrigger:
    """When a provider is asked: any of the conditions set (OR'd); with none, never.

    `every_n_calls` fires once the session has made N tool calls since the trigger last
    fired; `every_n_seconds` once N seconds have passed on the run's clock since it last fired
    (or the session started); `file_appears` (a path relative to the workspace, or a glob
    such as ``"out/*.json"``) when a matching file exists that did not at the previous turn
    (files there before the session's first model call do not count). Firing resets the
    counts of all three.

    A plain path is one stat per turn. A glob is matched against the files the run's
    `WorkspaceMonitor` saw appear (files only, outside ``.git``, ``node_modules`` and the
    other usual tool folders), and the turn first waits for pending file events, so a file
    written just before the turn ended, by any process, fires on that turn.
    """

    every_n_calls: int | None = None
    every_n_seconds: float | None = None
    file_appears: str | None = None

    def __attrs_post_init__(self) -> None:
        check_positive(
            "every_n_calls",
            self.every_n_calls,
            integer=True,
            allow_none=True,
            owner="FeedbackTrigger",
        )
        check_positive(
            "every_n_seconds", self.every_n_seconds, allow_none=True, owner="FeedbackTrigger"
        )
        pattern = self.file_appears
        if pattern is None:
            return
        if not isinstance(pattern, str) or not pattern.strip():
            raise ConfigurationError(
                f"FeedbackTrigger: 'file_appears' must be a non-empty path (got {pattern!r})"
            )
        path = PurePosixPath(pattern)
        if path.is_absolute() or ".." in path.parts:
            raise ConfigurationError(
                "FeedbackTrigger: 'file_appears' must be a path inside the workspace "
                f"(got {pattern!r})"
            )

    @property
    def file_appears_glob(self) -> bool:
        """Whether `file_appears` is a glob (a pattern, not one path)."""
        return self.file_appears is not None and not _GLOB.isdisjoint(self.file_appears)

    @property
    def never(self) -> bool:
        return self.every_n_calls is None and self.every_n_seconds is None and not self.file_appears


def _provider(value: object) -> FeedbackProvider:
    if not isinstance(value, FeedbackProvider):
        raise ConfigurationError(
            f"'provider' must have a name, should_run(context) and provide(context) (got {value!r})"
        )
    name = value.name
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigurationError(
            "a feedback provider's name must be 1-64 letters, digits, '_', '.' or '-' "
            f"(got {name!r})"
        )
    for method in ("should_run", "provide"):
        if inspect.iscoroutinefunction(getattr(value, method)):
            raise ConfigurationError(
                f"feedback provider {name!r}: {method} must be a plain function, not async "
                "(providers read an in-memory snapshot; slow work belongs in a check or a tool)"
            )
    return value


def _trigger(value: object) -> FeedbackTrigger:
    if not isinstance(value, FeedbackTrigger):
        raise ConfigurationError(f"'trigger' must be a FeedbackTrigger (got {value!r})")
    return value


@frozen
class FeedbackProviderConfig:
    """A provider and the trigger that decides when it is asked."""

    provider: FeedbackProvider = field(converter=_provider)
    trigger: FeedbackTrigger = field(converter=_trigger)

    @classmethod
    def of(cls, item: Any) -> FeedbackProviderConfig:
        """Accept a config or a ``(provider, trigger)`` pair."""
        if isinstance(item, FeedbackProviderConfig):
            return item
        if isinstance(item, tuple) and len(item) == 2:
            return cls(item[0], item[1])
        raise ConfigurationError(
            "'feedback' must hold FeedbackProviderConfig objects or (provider, trigger) pairs "
            f"(got {item!r})"
        )
