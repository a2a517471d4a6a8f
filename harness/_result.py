"""Why a run stopped (`HaltReason` and its kinds) and what it produced (`RunResult`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from attrs import field, fields, frozen

from ._messages import Message, Usage

if TYPE_CHECKING:
    from ._events._run import SinkFailed
    from ._protected import Tampering
    from ._verification import Baseline
    from ._work_progress import WorkProgress


@frozen
class HaltReason:
    """Base of every reason a run stops. Only `Completed` means the work was verified."""

    verified: ClassVar[bool] = False

    def describe(self) -> str:
        """One line a person can read."""
        return type(self).__name__

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> HaltReason:
        """The reason a transcript's ``reason`` object describes: its class when this process
        knows its ``type`` and its fields fit, else an `UnknownHalt` keeping both."""
        return halt_from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": type(self).__name__}
        for f in fields(type(self)):
            data[f.name] = getattr(self, f.name)
        return data


@frozen
class Completed(HaltReason):
    """The agent claimed done and the completion check agreed."""

    verified: ClassVar[bool] = True
    early: bool = False

    def describe(self) -> str:
        if self.early:
            return "completed: the work was already done before the first model call"
        return "completed: the completion check passed"


@frozen
class BudgetExceeded(HaltReason):
    """A budget dimension ran out; the completion check was skipped."""

    limit: str
    used: float
    limit_value: float
    scope: Literal["run", "session"] = "run"

    def describe(self) -> str:
        where = "" if self.scope == "run" else f" ({self.scope})"
        return f"budget exceeded{where}: {self.limit} used {self.used:g} of {self.limit_value:g}"


@frozen
class SensorTripped(HaltReason):
    """A sensor decided the run is going nowhere."""

    sensor: str
    message: str

    def describe(self) -> str:
        return f"sensor {self.sensor} tripped: {self.message}"


@frozen
class RejectionLimit(HaltReason):
    """The completion check rejected the agent's claim of done too many times."""

    rejections: int
    last_reason: str

    def describe(self) -> str:
        return (
            f"the completion check rejected {self.rejections} claims of done; "
            f"last reason: {self.last_reason}"
        )


@frozen
class ModelFailed(HaltReason):
    """The model client failed in a way retrying could not fix (auth, bad request, ...)."""

    kind: str
    message: str

    def describe(self) -> str:
        return f"model call failed ({self.kind}): {self.message}"


@frozen
class UsageLimitReached(HaltReason):
    """The model met a usage limit whose wait (`wait` seconds, the reset plus jitter) is longer
    than `max_pause`; the run stopped instead of pausing. `retry_in` is what the limit
    reported (None: the reset could not be read)."""

    source: str
    message: str
    retry_in: float | None
    wait: float
    max_pause: float

    def describe(self) -> str:
        return (
            f"{self.source} usage limit: the wait of {self.wait:g}s is longer than max_pause "
            f"{self.max_pause:g}s: {self.message}"
        )


@frozen
class ToolServerFailed(HaltReason):
    """An MCP server of the run could not be started, initialised or listed (or offered a
    tool whose name is taken): the run stopped before its first model call."""

    server: str
    message: str

    def describe(self) -> str:
        return f"MCP server {self.server!r} failed: {self.message}"


@frozen
class Cancelled(HaltReason):
    """The run was asked to stop from outside (a `CancelToken`; SIGTERM or SIGINT to the
    command line) and stopped where it was, as at a deadline; the work was not verified."""

    by: str

    def describe(self) -> str:
        return f"cancelled by {self.by}"


@frozen
class SessionTranscript:
    """The messages of one session (a Ralph iteration, a builder or evaluator session)."""

    agent: str
    iteration: int
    messages: tuple[Message, ...]


@frozen
class Spent:
    """What a run used: tokens, cost and wall time. `cost_usd` is None when a price was
    unknown: an unknown cost stays unknown, never zero."""

    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    wall_time: float

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": self.cost_usd,
            "wall_time": self.wall_time,
        }

    def describe(self) -> str:
        """``$0.0123, 4,271 tokens, 12.5s`` (the cost ``unknown`` when it is)."""
        cost = "cost unknown" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        return f"{cost}, {self.total_tokens:,} tokens, {self.wall_time:.2f}s"


@frozen
class RunResult:
    """What a run produced: why it stopped, whether the work was verified, and the transcript.

    `sink_failures` lists the event sinks that raised and were detached (a transcript on a
    full disk, a log on a closed pipe): empty when every sink got every event.
    """

    run_id: str
    halt_reason: HaltReason
    sessions: tuple[SessionTranscript, ...]
    usage: Usage
    turns: int
    tool_calls: int
    iterations: int
    elapsed: float
    sink_failures: tuple[SinkFailed, ...] = ()
    baselines: tuple[Baseline, ...] = ()
    """What the checks recorded before the agent's first turn (the failures that predate it)."""
    tampering: tuple[Tampering, ...] = ()
    """Every change to a protected path found at a claim, in the order found."""
    attempts: tuple[AttemptResult, ...] = ()
    """A best-of run's attempts, in order (see `strategies.BestOf`); empty otherwise."""

    @property
    def verified(self) -> bool:
        """True only when the completion check passed."""
        return self.halt_reason.verified

    @property
    def spent(self) -> Spent:
        """The tokens, cost (None: a price was unknown) and wall time the run used."""
        usage = self.usage
        return Spent(usage.input_tokens, usage.output_tokens, usage.cost_usd, self.elapsed)

    @property
    def verified_cost(self) -> Spent | None:
        """What getting to a verified result cost: everything the run spent, its rejected
        claims, Ralph iterations and evaluator calls included; None when it was not verified."""
        return self.spent if self.verified else None

    @property
    def transcript(self) -> tuple[Message, ...]:
        """Every message of every session, in order."""
        return tuple(m for s in self.sessions for m in s.messages)

    @property
    def final_text(self) -> str | None:
        """The last assistant text of the run."""
        for message in reversed(self.transcript):
            if message.role == "assistant" and message.content:
                return message.content
        return None

    def __repr__(self) -> str:
        return (
            f"RunResult(halt_reason={self.halt_reason!r}, verified={self.verified}, "
            f"turns={self.turns}, iterations={self.iterations})"
        )


@frozen
class UnknownHalt(HaltReason):
    """A halt reason this harness cannot rebuild (an unknown type, or fields its class does
    not take): its type and fields, kept as they were."""

    type: str
    fields: Mapping[str, Any] = field(factory=dict)

    def describe(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.fields.items())
        return f"{self.type}({shown})"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.fields}


def _halt_classes() -> dict[str, type[HaltReason]]:
    found: dict[str, type[HaltReason]] = {}
    pending: list[type[HaltReason]] = [HaltReason]
    while pending:
        cls = pending.pop()
        found.setdefault(cls.__name__, cls)
        pending.extend(cls.__subclasses__())
    found.pop(UnknownHalt.__name__, None)
    return found


def halt_from_dict(data: Mapping[str, Any]) -> HaltReason:
    """The halt reason a ``reason`` object describes: its class when this process knows its
    ``type`` (the strategies' reasons once `strategies` is imported) and its fields fit, else
    an `UnknownHalt`."""
    kind = str(data.get("type", "?"))
    rest = {k: v for k, v in data.items() if k != "type"}
    cls = _halt_classes().get(kind)
    if cls is not None:
        try:
            return cls(**rest)
        except (TypeError, ValueError):
            pass
    return UnknownHalt(kind, rest)


@frozen
class AttemptResult:
    """One attempt of a best-of run: why it halted, what the check measured of its work
    (`progress`, None when not measured), the files it changed, whether it `won` (was
    picked) and was `applied` to the user's workspace, and its own run's `result` (None for
    an attempt that never started)."""

    number: int
    halt_reason: HaltReason
    progress: WorkProgress | None = None
    workspace: str = "shared"
    changed: tuple[str, ...] = ()
    won: bool = False
    applied: bool = False
    result: RunResult | None = None

    @property
    def verified(self) -> bool:
        """True when the attempt's own check accepted its work."""
        return self.halt_reason.verified

    def describe(self) -> str:
        """``attempt 2: completed: the completion check passed (5 of 5 tests) [applied]``:
        one line, the halt's first line only."""
        measured = f" ({self.progress.describe()})" if self.progress is not None else ""
        mark = " [applied]" if self.applied else " [picked]" if self.won else ""
        halt = self.halt_reason.describe().partition("\n")[0]
        return f"attempt {self.number}: {halt}{measured}{mark}"
