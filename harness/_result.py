"""What a run produced (`RunResult`, its sessions' transcripts, what it spent) and a best-of
run's attempts; why it stopped is a `HaltReason` (`_halt`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attrs import frozen

from ._messages import Message
from ._usage import Usage

if TYPE_CHECKING:
    from ._events._run import SinkFailed
    from ._halt import HaltReason
    from ._protected import Tampering
    from ._verification import Baseline
    from ._work_progress import WorkProgress


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
