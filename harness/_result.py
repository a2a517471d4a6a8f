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
            f"the completion check rejected {self.rejections} "
            f"{'claim' if self.rejections == 1 else 'claims'} of done; "
            f"last reason: {self.last_reason}"
        )


@frozen
class CheckBroken(HaltReason):
    """The completion check could not judge the work at `claims` claims in a row: its command
    could not start (`cannot_run`) or it raised the same error each time (`message`). The
    agent cannot fix that, so the run stops (the policy's `max_check_errors`); the work was
    not verified."""

    claims: int
    message: str
    cannot_run: bool = False

    def describe(self) -> str:
        what = "could not run" if self.cannot_run else "raised the same error"
        claims = "1 claim" if self.claims == 1 else f"{self.claims} claims in a row"
        return f"the completion check {what} at {claims}: {self.message}"


@frozen
class ModelFailed(HaltReason):
    """The model client failed in a way retrying could not fix (auth, bad request, ...)."""

    kind: str
    message: str

    def describe(self) -> str:
        return f"model call failed ({self.kind}): {self.message}"


@frozen
class UsageLimitReached(HaltReason):
    """The model met a usage limit the run would not wait out, so it stopped instead of
    pausing. `cause` says why: ``max_pause`` (this wait, `wait` seconds with jitter, is longer
    than `max_pause`), ``terminal`` (the quota is gone, not a window that resets: a daily
    quota exhausted, credits spent), ``max_total_pause`` (this wait would take the run's
    pauses past that total) or ``max_pauses`` (the run has paused that many times already).
    `retry_in` is what the limit reported (None: the reset could not be read); `max_pause` is
    the bound that was exceeded, in seconds or (``max_pauses``) pauses."""

    source: str
    message: str
    retry_in: float | None
    wait: float
    max_pause: float
    cause: str = "max_pause"

    def describe(self) -> str:
        if self.cause == "terminal":
            return f"{self.source} quota exhausted (waiting does not reset it): {self.message}"
        if self.cause == "max_total_pause":
            return (
                f"{self.source} usage limit: a wait of {self.wait:g}s would take the run's "
                f"pauses past max_total_pause {self.max_pause:g}s: {self.message}"
            )
        if self.cause == "max_pauses":
            return (
                f"{self.source} usage limit: the run has already paused {self.max_pause:g} "
                f"times (max_pauses): {self.message}"
            )
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
    score: AttemptScore | None = None
    """What ``pick = "best_verified"`` ranked this verified attempt by (None: not ranked)."""
    rank: int | None = None
    """Its place in that ranking, 1 for the first (None: not ranked)."""
    wave: int = 1
    """The wave it ran in (``BestOf(waves=...)``): 2 and later were told what failed before."""

    @property
    def verified(self) -> bool:
        """True when the attempt's own check accepted its work."""
        return self.halt_reason.verified

    def describe(self) -> str:
        """``attempt 2: completed: the completion check passed (5 of 5 tests) [applied]``:
        one line, the halt's first line only (with its rank and score when it was ranked)."""
        measured = f" ({self.progress.describe()})" if self.progress is not None else ""
        ranked = (
            f" (rank {self.rank}: {self.score.describe()})"
            if self.rank is not None and self.score is not None
            else ""
        )
        mark = " [applied]" if self.applied else " [picked]" if self.won else ""
        halt = self.halt_reason.describe().partition("\n")[0]
        return f"attempt {self.number}: {halt}{measured}{ranked}{mark}"


@frozen
class AttemptScore:
    """What a verified attempt of a best-of run is ranked by (``pick = "best_verified"``):
    the `lines` it added and removed over `files` files, the changed files the task does not
    name (`outside`), the test or protected files it changed (`guarded`), and what it cost
    (`cost_usd`, None when the provider prices nothing; `tokens`, input and output)."""

    attempt: int
    lines: int
    files: int
    outside: tuple[str, ...] = ()
    guarded: tuple[str, ...] = ()
    cost_usd: float | None = None
    tokens: int = 0

    def describe(self) -> str:
        """``12 lines in 2 files, 1 outside the task, no tests touched, $0.0030``."""
        parts = [f"{self.lines} lines in {self.files} files"]
        if self.outside:
            parts.append(f"{len(self.outside)} outside the task")
        parts.append(f"touches {', '.join(self.guarded)}" if self.guarded else "no tests touched")
        cost = self.cost_usd
        parts.append(f"${cost:.4f}" if cost is not None else f"{self.tokens} tokens")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "lines": self.lines,
            "files": self.files,
            "outside": list(self.outside),
            "guarded": list(self.guarded),
            "cost_usd": self.cost_usd,
            "tokens": self.tokens,
        }
