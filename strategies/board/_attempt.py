"""One attempt at a task: build its run from the task file and the agent's model, run it,
and say what became of the task.

`execute_attempt` is all an engine runs, in this process or on a Ray worker: its input is a
plain value (`AttemptSpec`), its events go to a callback as dicts (the transcript's lines),
and its result is a plain value (`AttemptOutcome`). It never raises for the task's sake: a
broken fixture, a model that cannot be built or a verify command that is not installed all
come back as a ``failed`` outcome with the reason.

Outcomes: ``complete`` only when the run's `RunResult.verified` is true (the completion check
passed); ``failed`` for hard failures nobody can wait out (a verify command missing, a model
auth or bad-request error, a broken fixture); ``retry`` for a transient model failure the
client's own retries did not get past (rate limit, 5xx, timeout, connection); ``paused`` for
a usage limit longer than the run may wait (`UsageLimitReached`), and for an attempt the board
stopped because its account paused: the task is pending again, with what it got done carried,
and no attempt is charged; ``review`` for every other halt (a budget, the iterations or rounds
used up, a sensor, the rejection cap): the work may be nearly done, and a person should look.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from attrs import evolve, field, frozen

from checks import AllOf, CommandCheck, CompletionCheck, TestSuiteCheck
from harness import (
    ConfigurationError,
    FixtureError,
    HaltReason,
    Harness,
    ModelClient,
    RunResult,
    model_from_config,
)
from harness.events import CheckpointSaved, Event, EventSink
from harness.extend import LibraryLogger, Run, Strategy
from termination import Budget, TerminationPolicy

from .._ralph import Ralph
from .._spec import Spec, capped, spec_from_table
from ._board_config import AttemptInfo, ModelSource
from ._recovery import AttemptProgress, BestCheckpoint

Outcome = Literal["complete", "review", "failed", "retry", "paused"]
TRANSIENT = frozenset({"rate_limit", "server", "timeout", "connection"})
Emit = Callable[[dict[str, Any]], None]

_log = LibraryLogger("harness.board")


@frozen
class AttemptSpec:
    """Everything an attempt needs, as plain data an engine can ship to another process."""

    info: AttemptInfo
    file: Path
    table: Mapping[str, Any] = field(eq=False)
    body: str
    model: ModelSource = field(eq=False)
    model_base: Path | None
    workspace: Path | None
    carry: AttemptProgress = AttemptProgress()
    check_first: bool = False
    spec: Spec | None = field(default=None, eq=False, repr=False)
    """The task's spec, already built (in the board's process); else built from `table`."""
    sinks: tuple[EventSink, ...] = field(default=(), eq=False, repr=False)
    """More sinks for the run's events, in the board's process (a display, a tracer): an
    engine that runs the attempt elsewhere drops them."""

    @property
    def budget(self) -> Budget | None:
        """The run's budget, less what interrupted attempts used (None when the task's spec
        is not built here, or nothing is left)."""
        if self.spec is None:
            return None
        budget = remaining_budget(capped(self.spec.policy).budget, self.carry)
        return None if isinstance(budget, str) else budget


@runtime_checkable
class AttemptWatcher(Protocol):
    """Follows each attempt in the board's process (`Board(watchers=...)`): `started` gives
    sinks for the attempt's run events, `finished` comes once the attempt is over, with its
    outcome (None when it was cancelled). Only an engine that runs attempts in the board's
    process (the local one) hands the run's events to those sinks; both calls come either
    way. Called on the board's event loop: they must not block."""

    def started(self, spec: AttemptSpec) -> Sequence[EventSink]: ...

    def finished(self, spec: AttemptSpec, outcome: AttemptOutcome | None) -> None: ...


@frozen
class AttemptOutcome:
    """What became of an attempt: the task's next status and why."""

    outcome: Outcome
    message: str
    halt: Mapping[str, Any] | None = field(default=None, eq=False)
    turns: int = 0
    tool_calls: int = 0
    iterations: int = 0
    usage: Mapping[str, Any] = field(factory=dict, eq=False)
    elapsed: float = 0.0
    checkpoint: str | None = None
    """The attempt's best checkpoint (what a rollback would restore), if it kept any."""

    @classmethod
    def of(cls, result: RunResult, checkpoint: str | None = None) -> AttemptOutcome:
        halt = result.halt_reason
        return cls(
            outcome=classify(halt.to_dict(), result.verified),
            message=halt.describe(),
            halt=halt.to_dict(),
            turns=result.turns,
            tool_calls=result.tool_calls,
            iterations=result.iterations,
            usage=result.usage.to_dict(),
            elapsed=result.elapsed,
            checkpoint=checkpoint,
        )


def classify(halt: Mapping[str, Any], verified: bool) -> Outcome:
    """The task's fate from a run's halt: complete only when verified."""
    if verified:
        return "complete"
    if halt.get("type") == "UsageLimitReached":
        return "paused"
    if halt.get("type") == "ModelFailed":
        return "retry" if halt.get("kind") in TRANSIENT else "failed"
    if halt.get("type") == "CheckBroken":  # the check cannot judge: no attempt can pass it
        return "failed"
    return "review"


class _Forward:
    """Hands every event of the run, as a transcript line's dict, to the board, and keeps the
    attempt's best checkpoint."""

    __slots__ = ("_emit", "best")

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self.best = BestCheckpoint()

    def emit(self, event: Event) -> None:
        if isinstance(event, CheckpointSaved):
            self.best.saw(event)
        self._emit(event.to_dict())


async def execute_attempt(spec: AttemptSpec, emit: Emit) -> AttemptOutcome:
    """Run one attempt to its outcome. Cancellation from outside propagates."""
    forward = _Forward(emit)
    try:
        harness_or_outcome = _prepare(spec, forward)
    except (ConfigurationError, FixtureError) as exc:
        return AttemptOutcome("failed", f"the run could not be set up: {exc}")
    if isinstance(harness_or_outcome, AttemptOutcome):
        return harness_or_outcome
    try:
        result = await harness_or_outcome.run(spec.body)
    except FixtureError as exc:
        return AttemptOutcome("failed", f"the agent's fixture broke: {exc}")
    except ConfigurationError as exc:
        return AttemptOutcome("failed", f"the run is misconfigured: {exc}")
    except Exception as exc:  # a bug in a tool or a client must not take the board down
        _log.exception("board.attempt.crashed", task=spec.info.task, attempt=spec.info.attempt)
        return AttemptOutcome("failed", f"the run crashed: {type(exc).__name__}: {exc}")
    return AttemptOutcome.of(result, forward.best.id)


@frozen
class NothingLeft(HaltReason):
    """A resumed attempt had nothing left to spend (its budget or its iterations were used up
    before the interruption), and its check, run first, did not pass."""

    message: str

    def describe(self) -> str:
        return self.message


@frozen
class _CheckOnly:
    """A strategy that runs no session: the check before the first turn completes the run
    when the work is done; otherwise the run halts with `halt`."""

    halt: HaltReason
    name: str = "check_only"

    async def run(self, run: Run) -> HaltReason:
        return self.halt


def _prepare(spec: AttemptSpec, forward: _Forward) -> Harness | AttemptOutcome:
    task = spec.spec or spec_from_table(
        {**spec.table, "prompt": spec.body}, spec.file, purpose="task"
    )
    policy = capped(task.policy)  # an attempt is an unattended run: never unbounded
    strategy: Strategy = task.build_strategy()
    carry = spec.carry
    spent: str | None = None  # why nothing is left to spend, if so
    if not carry.empty:
        budget = remaining_budget(policy.budget, carry)
        if isinstance(budget, str):
            spent = budget
        else:
            policy = evolve(policy, budget=budget)
        if spent is None and isinstance(strategy, Ralph) and carry.iterations:
            left = strategy.max_iterations - carry.iterations
            if left < 1:
                spent = (
                    f"ralph ran {carry.iterations} iterations before the interruption and "
                    f"the check still failed: {carry.last_reason}"
                )
            else:
                strategy = evolve(strategy, max_iterations=left)
    if spent is not None:
        if not spec.check_first:
            return AttemptOutcome("review", spent)
        # The work may have been finished when the attempt was cut short: the check decides.
        strategy = _CheckOnly(NothingLeft(spent))
    if spec.check_first:
        policy = evolve(policy, check_before_first_turn=True)
    missing = missing_command(policy, spec.workspace)
    if missing is not None:
        return AttemptOutcome("failed", missing)
    return task.harness(
        model=build_model(spec),
        policy=policy,
        strategy=strategy,
        workspace=spec.workspace,
        sinks=[forward, *spec.sinks],
    )


def build_model(spec: AttemptSpec) -> ModelClient:
    """The attempt's model: from the agent's table (placeholders filled) or its factory."""
    source = spec.model
    if callable(source):
        return source(spec.info)
    where = f"agent {spec.info.agent}: model"
    return model_from_config(dict(source), where=where, base=spec.model_base)


_LIMITS: dict[str, Callable[[AttemptProgress], float | None]] = {
    "max_turns": lambda p: p.turns,
    "max_tool_calls": lambda p: p.tool_calls,
    "max_input_tokens": lambda p: p.input_tokens,
    "max_output_tokens": lambda p: p.output_tokens,
    "max_total_tokens": lambda p: p.input_tokens + p.output_tokens,
    "max_cost_usd": lambda p: p.cost_usd,
    "max_wall_time": lambda p: p.wall_time,
}


def remaining_budget(budget: Budget, carry: AttemptProgress) -> Budget | str:
    """`budget` less what interrupted attempts used, or why nothing is left."""
    changes: dict[str, Any] = {}
    for name, used_of in _LIMITS.items():
        limit = getattr(budget, name)
        used = used_of(carry)
        if limit is None or used is None or used == 0:
            continue
        left = limit - used
        if left <= 0:
            return f"budget exceeded before the interruption: {name} used {used:g} of {limit:g}"
        changes[name] = left
    return evolve(budget, **changes) if changes else budget


# Words a shell runs itself: a verify command starting with one of them is not looked up.
_SHELL_WORDS = frozenset(
    {
        ".",
        ":",
        "[",
        "[[",
        "!",
        "{",
        "(",
        "alias",
        "bg",
        "break",
        "builtin",
        "case",
        "cd",
        "command",
        "continue",
        "declare",
        "echo",
        "eval",
        "exec",
        "exit",
        "export",
        "false",
        "fg",
        "for",
        "function",
        "hash",
        "if",
        "jobs",
        "kill",
        "let",
        "local",
        "printf",
        "pwd",
        "read",
        "readonly",
        "return",
        "set",
        "shift",
        "source",
        "test",
        "time",
        "trap",
        "true",
        "type",
        "ulimit",
        "umask",
        "unalias",
        "unset",
        "until",
        "wait",
        "while",
    }
)


def missing_command(policy: TerminationPolicy, workspace: Path | None) -> str | None:
    """Why the task's verify command cannot run at all (not installed), or None.

    Only a bare program name (``pytest``, ``cargo``) is looked up on PATH: a path may be a
    script the agent is to write, and a shell line may start with a builtin. Checks inside
    `AnyOf` are skipped, as another branch may pass.
    """
    for check in _required_checks(policy.completion_check):
        if not isinstance(check, CommandCheck | TestSuiteCheck):
            continue
        program = _program(check.command)
        if program is None:
            continue
        path = check.env.get("PATH", os.environ.get("PATH", os.defpath))
        if shutil.which(program, path=path) is None:
            return (
                f"the verify command `{program}` is not installed: it is not on PATH ({path}); "
                "install it or change the task's check"
            )
    return None


def _required_checks(check: CompletionCheck) -> list[CompletionCheck]:
    if isinstance(check, AllOf):
        return [c for child in check.checks for c in _required_checks(child)]
    return [check]


def _program(command: str | tuple[str, ...]) -> str | None:
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            return None
        while words and "=" in words[0] and not words[0].startswith("="):
            words = words[1:]  # VAR=value before the program
        if not words:
            return None
        first = words[0]
        if first in _SHELL_WORDS or any(c in first for c in "$`;&|<>(){}*?"):
            return None
    else:
        first = command[0]
    return None if "/" in first else first
