"""`BestOf`: N independent attempts of one task; one the check accepts is kept.

Each attempt is a run of its own (the inner strategy, the run's model forked for it, the
run's tools and check) in a private workspace (see `strategies._attempt_workspaces`), under
its share of the run's budget (`strategies._attempt_budget`); its events reach the run's
sinks inside ``attempt.event``. The winner's changed files are written into the user's
workspace and the check runs there, with the protected paths and baselines the run recorded
at its start; a refusal puts the workspace back (`strategies._apply_changes`).
"""

from __future__ import annotations

from typing import Literal

import anyio
from attrs import define, evolve, field, frozen

from harness import (
    AttemptResult,
    Cancelled,
    CancelToken,
    Completed,
    ConfigurationError,
    Event,
    HaltReason,
    Harness,
    RunResult,
    SessionStateSnapshot,
    Usage,
)
from harness.checkpoints import Assessment, WorkProgress
from harness.events import (
    AttemptApplied,
    AttemptEvent,
    AttemptFinished,
    AttemptRefused,
    AttemptStarted,
    AttemptWon,
    RunWarning,
)
from harness.extend import (
    ForksAttempts,
    ModelClient,
    PolicySession,
    Run,
    Strategy,
    check_positive,
    implements,
)
from termination import Budget, TerminationPolicy

from ._apply_changes import apply_changes
from ._attempt_budget import ADDITIVE, BudgetPool, share_of
from ._attempt_workspaces import (
    ISOLATIONS,
    AttemptWorkspace,
    AttemptWorkspaces,
    Isolation,
    WorkspaceFailed,
)
from ._reasons import NoAttemptVerified, WinnerRefused, WorkspaceUnwritable

Pick = Literal["first_verified", "best_progress"]
PICKS: tuple[Pick, ...] = ("first_verified", "best_progress")


def _ralph() -> Strategy:
    from ._ralph import Ralph

    return Ralph()


@frozen(kw_only=True)
class BestOf:
    """Run `n` attempts of the task, each with `strategy` in its own workspace, at most
    `concurrency` at a time (default: all), and keep one the check accepts.

    ``pick="first_verified"``: the first attempt whose work the check accepts wins and the
    others are cancelled. ``pick="best_progress"``: every attempt runs to its end and, of
    those the check accepted, the one it measured furthest along (tests, features, files
    passing) wins; the first on a tie. The winner's changes are applied to the run's
    workspace only if the check, run again there with the run's protected paths and
    baselines, accepts them; otherwise the workspace is left as it was and the run halts
    `WinnerRefused`. No verified attempt: `NoAttemptVerified`, the workspace untouched.

    Each attempt runs under `attempt_budget` (by default the run's budget divided by `n`),
    and never past what the run's budget has left. `isolation`: ``"auto"`` (a git worktree
    in a git repository, else a copy), ``"worktree"`` or ``"copy"``. The model is forked per
    attempt when it can be (`harness.extend.ForksAttempts`: a scripted fixture's
    ``attempt`` lines), else shared.
    """

    n: int = 4
    strategy: Strategy = field(factory=_ralph)
    concurrency: int | None = None
    pick: Pick = "first_verified"
    attempt_budget: Budget | None = None
    isolation: Isolation = "auto"
    name: str = "best_of"

    def __attrs_post_init__(self) -> None:
        check_positive("n", self.n, integer=True)
        check_positive("concurrency", self.concurrency, integer=True, allow_none=True)
        if self.pick not in PICKS:
            raise ConfigurationError(
                f"'pick' must be one of {', '.join(PICKS)} (got {self.pick!r})"
            )
        if self.isolation not in ISOLATIONS:
            raise ConfigurationError(
                f"'isolation' must be one of {', '.join(ISOLATIONS)} (got {self.isolation!r})"
            )
        if not implements(self.strategy, Strategy):
            raise ConfigurationError(f"'strategy' must be a Strategy (got {self.strategy!r})")
        if isinstance(self.strategy, BestOf):
            raise ConfigurationError("'strategy' must not be another BestOf")
        if self.attempt_budget is not None and not isinstance(self.attempt_budget, Budget):
            raise ConfigurationError(
                f"'attempt_budget' must be a Budget (got {self.attempt_budget!r})"
            )

    async def run(self, run: Run) -> HaltReason:
        attempts = _Attempts(self, run)
        return await attempts.go()


@define(eq=False)
class _Outcome:
    number: int
    workspace: AttemptWorkspace | None
    result: RunResult | None
    halt: HaltReason
    progress: WorkProgress | None = None
    reason: str | None = None
    changed: tuple[str, ...] = ()


@define(eq=False)
class _Forward:
    """The sink of one attempt's run: its events go to the run's sinks, wrapped."""

    run: Run
    attempt: int

    def emit(self, event: Event) -> None:
        if event.name in ("run.started", "run.halted"):
            return  # ``attempt.started`` and ``attempt.finished`` say these, without run ids
        self.run.emit(AttemptEvent(self.run.elapsed(), self.attempt, event))


@define(eq=False)
class _Attempts:
    spec: BestOf
    run: Run
    spaces: AttemptWorkspaces | None = None
    pool: BudgetPool | None = None
    outcomes: dict[int, _Outcome] = field(factory=dict)
    tokens: dict[int, CancelToken] = field(factory=dict)
    first: int | None = None
    error: Exception | None = None

    @property
    def stopping(self) -> bool:
        return self.first is not None or self.error is not None

    async def go(self) -> HaltReason:
        run = self.run
        whole = run.policy.budget if isinstance(run.policy, TerminationPolicy) else Budget()
        per = share_of(whole, self.spec.n)
        if self.spec.attempt_budget is not None:
            own = self.spec.attempt_budget
            per = evolve(
                own,
                **{name: getattr(per, name) for name in ADDITIVE if getattr(own, name) is None},
            )
        self.pool = BudgetPool(whole, per)
        if run.workspace is not None:
            try:
                self.spaces = await AttemptWorkspaces.open(
                    run.workspace, run.run_id, self.spec.isolation
                )
            except WorkspaceFailed as exc:
                return WorkspaceUnwritable(exc.doing, exc.reason)
            for note in self.spaces.notes:
                run.emit(RunWarning(run.elapsed(), "best_of", note))
        try:
            await self._run_all()
            halt = None if self.error is not None else await self._settle()
        except WorkspaceFailed as exc:  # a full disk: a halt, the user's workspace intact
            self._record(None, applied=False)
            halt = WorkspaceUnwritable(exc.doing, exc.reason)
        except BaseException:
            if not run.attempts:  # cut off (the run's deadline, a cancel): what there was
                for number in range(1, self.spec.n + 1):
                    cut = Cancelled("best_of: the run was stopped")
                    self.outcomes.setdefault(number, _Outcome(number, None, None, cut))
                self._record(None, applied=False)
            raise
        finally:
            if self.spaces is not None:
                await self.spaces.close()
        if halt is None:
            assert self.error is not None
            if isinstance(self.error, WorkspaceFailed):
                self._record(None, applied=False)
                return WorkspaceUnwritable(self.error.doing, self.error.reason)
            raise self.error  # a fixture's fault, a git failure: not the run's own halt
        return halt

    async def _run_all(self) -> None:
        n = self.spec.n
        slots = anyio.Semaphore(self.spec.concurrency or n)
        async with anyio.create_task_group() as group:
            for number in range(1, n + 1):
                await slots.acquire()
                if self.stopping:
                    slots.release()
                    break
                group.start_soon(self._attempt, number, slots)
        for number in range(1, n + 1):
            if number not in self.outcomes:
                why = (
                    f"attempt {self.first} was verified first"
                    if self.first is not None
                    else "another attempt failed"
                )
                by = f"best_of, before it started: {why}"
                self.outcomes[number] = _Outcome(number, None, None, Cancelled(by))
                self._finished(self.outcomes[number])

    async def _attempt(self, number: int, slots: anyio.Semaphore) -> None:
        assert self.pool is not None
        try:
            share = self.pool.reserve(number)
            if isinstance(share, HaltReason):
                self.outcomes[number] = _Outcome(number, None, None, share)
                self._finished(self.outcomes[number])
                return
            kind = self.spaces.kind if self.spaces is not None else "shared"
            self.run.emit(AttemptStarted(self.run.elapsed(), number, self.spec.n, kind))
            space = await self.spaces.make(number) if self.spaces is not None else None
            token = CancelToken()
            self.tokens[number] = token
            if self.first is not None:
                token.cancel(f"best_of: attempt {self.first} was verified first")
            result = await self._harness(number, space, share).run(self.run.task, cancel=token)
            self.pool.settle(number, result)
            self._account(result)
            if result.verified and self.spec.pick == "first_verified" and self.first is None:
                self.first = number  # the others stop now, not after this one is looked at
                for other, held in self.tokens.items():
                    if other != number:
                        held.cancel(f"best_of: attempt {number} was verified first")
            outcome = _Outcome(number, space, result, result.halt_reason)
            await self._judge(outcome)
            self.outcomes[number] = outcome
            self._finished(outcome)
        except Exception as exc:  # a fixture's fault, a git failure: ends the run, raised
            if self.error is None:
                self.error = exc
            for held in self.tokens.values():
                held.cancel("best_of: another attempt failed")
        finally:
            slots.release()

    def _harness(self, number: int, space: AttemptWorkspace | None, share: Budget) -> Harness:
        run, config = self.run, self.run.config
        model: ModelClient = config.model
        if implements(model, ForksAttempts):
            model = model.for_attempt(number)
        policy = config.policy
        if isinstance(policy, TerminationPolicy):
            policy = evolve(policy, budget=share)
        return Harness(
            model=model,
            policy=policy,
            tools=list(config.tools.values()),
            strategy=self.spec.strategy,
            workspace=space.path if space is not None else None,
            system_prompt=config.system_prompt,
            clock=config.clock,
            sinks=[_Forward(run, number)],
            tool_timeout=config.tool_timeout,
            done_tool=config.done_tool,
            context_window=config.context_window,
            pause=config.pause,
            compaction=config.compaction,
            # The run's setting, each attempt's store its own: one `state_dir` would be shared.
            checkpoints=evolve(config.checkpoints, state_dir=None) if config.checkpoints else None,
        )

    def _account(self, result: RunResult) -> None:
        run = self.run
        run.turns += result.turns
        run.tool_calls += result.tool_calls
        run.iterations += result.iterations
        run.usage = run.usage + result.usage
        run.tampering.extend(result.tampering)

    async def _judge(self, outcome: _Outcome) -> None:
        """What the attempt changed and, for ``best_progress``, how far along the check
        measures its work (with the run's verifier, as at any claim): one more run of the
        check per attempt, which ``first_verified`` spares (its winner is measured by the
        final check)."""
        space = outcome.workspace
        if space is None or self.spaces is None or isinstance(outcome.halt, Cancelled):
            return
        outcome.changed = tuple(c.path for c in await self.spaces.changes(space))
        if self.spec.pick == "first_verified":
            return  # the final check measures the winner; the others need no more runs
        run = self.run
        policy = run.policy.start_session(clock=run.clock)
        snapshot = evolve(run.snapshot(), workspace=space.path)
        assessed = await _assess_quietly(run, snapshot, policy)
        outcome.progress, outcome.reason = assessed.progress, assessed.reason

    def _finished(self, outcome: _Outcome) -> None:
        result = outcome.result
        self.run.emit(
            AttemptFinished(
                self.run.elapsed(),
                outcome.number,
                outcome.halt,
                outcome.halt.verified,
                outcome.progress,
                result.turns if result else 0,
                result.tool_calls if result else 0,
                result.usage if result else Usage(),
                outcome.changed,
            )
        )

    def _winner(self) -> _Outcome | None:
        if self.spec.pick == "first_verified":
            return self.outcomes[self.first] if self.first is not None else None
        verified = [o for o in self.outcomes.values() if o.halt.verified]
        if not verified:
            return None
        return max(verified, key=lambda o: (*_rank(o.progress), -o.number))

    async def _settle(self) -> HaltReason:
        run = self.run
        winner = self._winner()
        if winner is None:
            self._record(None, applied=False)
            return self._unverified()
        run.emit(AttemptWon(run.elapsed(), winner.number, self.spec.pick, winner.progress))
        if self.spaces is None or winner.workspace is None:
            self._record(winner, applied=True)
            return Completed()
        changes = await self.spaces.changes(winner.workspace)
        drifted = await self.spaces.drifted(changes)
        if drifted:
            why = (
                "the workspace changed during the run in files the winner also changed ("
                + ", ".join(drifted)
                + "); its work was not applied, so as not to overwrite those changes"
            )
            run.emit(AttemptRefused(run.elapsed(), winner.number, why))
            self._record(winner, applied=False)
            return WinnerRefused(winner.number, why)
        with anyio.CancelScope(shield=True):
            applied = await apply_changes(
                changes, winner.workspace.path, self.spaces.workspace, self.spaces.aside
            )
        try:
            policy = run.policy.start_session(clock=run.clock)
            last = winner.result.sessions[-1].messages if winner.result else ()
            final = winner.result.final_text if winner.result else None
            snapshot = evolve(run.snapshot(), messages=last, final_text=final)
            assessed = await run.assess(snapshot, policy)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(applied.undo)
            raise
        if assessed.reason is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(applied.undo)
            run.emit(AttemptRefused(run.elapsed(), winner.number, assessed.reason))
            self._record(winner, applied=False)
            return WinnerRefused(winner.number, assessed.reason)
        await anyio.to_thread.run_sync(applied.discard)
        if assessed.progress is not None:
            winner.progress = assessed.progress
        run.emit(AttemptApplied(run.elapsed(), winner.number, tuple(c.path for c in changes)))
        self._record(winner, applied=True)
        return Completed()

    def _unverified(self) -> NoAttemptVerified:
        """The halt when no attempt was verified: naming the one measured furthest along
        (``best_progress``), else what stopped the last one that ran."""
        ran = [o for o in self.outcomes.values() if o.result is not None]
        measured = [o for o in ran if o.progress is not None]
        if measured:
            best = max(measured, key=lambda o: (*_rank(o.progress), -o.number))
            return NoAttemptVerified(self.spec.n, best.number, best.reason or best.halt.describe())
        if not ran:
            last = max(self.outcomes.values(), key=lambda o: o.number)
            return NoAttemptVerified(self.spec.n, 0, last.halt.describe())
        last = max(ran, key=lambda o: o.number)
        return NoAttemptVerified(self.spec.n, 0, f"attempt {last.number}: {last.halt.describe()}")

    def _record(self, winner: _Outcome | None, *, applied: bool) -> None:
        for number in sorted(self.outcomes):
            o = self.outcomes[number]
            won = winner is not None and o.number == winner.number
            self.run.attempts.append(
                AttemptResult(
                    number=o.number,
                    halt_reason=o.halt,
                    progress=o.progress,
                    workspace=o.workspace.kind if o.workspace else "shared",
                    changed=o.changed,
                    won=won,
                    applied=won and applied,
                    result=o.result,
                )
            )


def _rank(progress: WorkProgress | None) -> tuple[float, int]:
    return (-1.0, -1) if progress is None else (progress.fraction, progress.done)


async def _assess_quietly(
    run: Run, snapshot: SessionStateSnapshot, policy: PolicySession
) -> Assessment:
    """The check's verdict and measure of `snapshot`'s workspace with the run's verifier (its
    protected paths laid over any change to them), recorded nowhere: an attempt's own run
    has already reported its checks."""
    guard, workspace = run.guard, snapshot.workspace
    if guard is not None and workspace is not None:
        changes = await anyio.to_thread.run_sync(guard.changes, workspace)
        if changes:
            async with guard.pristine(workspace, changes) as copy:
                judged = evolve(snapshot, workspace=copy, tampering=changes)
                return await policy.assess(judged)
    return await policy.assess(snapshot)
