"""`BestOf`: N independent attempts of one task; one the check accepts is kept.

Each attempt is a run of its own (the inner strategy, the run's model forked for it, the
run's tools and check) in a private workspace (see `strategies._attempt_workspaces`), under
its share of the run's budget (`strategies._attempt_budget`); its events reach the run's
sinks inside ``attempt.event``. The winner's changed files are written into the user's
workspace and the check runs there, with the protected paths and baselines the run recorded
at its start; a refusal puts the workspace back (`strategies._apply_changes`).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Literal

import anyio
from attrs import define, evolve, field, frozen

from harness import (
    AttemptResult,
    AttemptScore,
    Cancelled,
    CancelToken,
    Completed,
    ConfigurationError,
    HaltReason,
    Harness,
    RunResult,
    Usage,
)
from harness.checkpoints import WorkProgress
from harness.events import (
    AttemptApplied,
    AttemptEvent,
    AttemptFinished,
    AttemptRefused,
    AttemptsRanked,
    AttemptStarted,
    AttemptWon,
    CheckFailed,
    CheckPassed,
    Event,
    RunWarning,
    WaveStarted,
)
from harness.extend import (
    ForksAttempts,
    ModelClient,
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
    Change,
    Isolation,
    WorkspaceFailed,
    changed_paths,
)
from ._best_of_digest import FailedAttempt, digest
from ._best_of_ranking import FileChange, Ranking, SmallestChange, measure, ranked, score
from ._best_of_ray import RayAttempts, RemoteAttempt, lay_into, pack
from ._reasons import NoAttemptVerified, WinnerRefused, WorkspaceUnwritable

Pick = Literal["first_verified", "best_progress", "best_verified"]
PICKS: tuple[Pick, ...] = ("first_verified", "best_progress", "best_verified")


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
    passing) wins; the first on a tie. ``pick="best_verified"``: every attempt runs to its
    end (or until `max_verified` are verified, the others then cancelled) and `ranking`
    orders the verified ones (default `SmallestChange`: no test or protected file changed,
    fewest files outside what the task names, fewest changed lines, cheapest); the first
    wins, and ``attempt.ranked`` records the order. The winner's changes are applied to the
    run's workspace only if the check, run again there with the run's protected paths and
    baselines, accepts them; otherwise the workspace is left as it was and the run halts
    `WinnerRefused`. No verified attempt: `NoAttemptVerified`, the workspace untouched.

    `engine`: `RayAttempts` runs each attempt on a Ray worker, in a checkout of its own
    (see `RayAttempts`); by default they run in the run's process.

    `waves`: when no attempt of a wave of `n` is verified, another wave of `n` starts (up
    to `waves` in all), its task followed by a digest of every failed attempt so far (how it
    ended, what it changed, the tests it broke or left failing, the check's last reason;
    bounded: docs/best-of.md says how), recorded in ``attempt.wave``.

    Each attempt runs under `attempt_budget` (by default the run's budget divided by
    ``n * waves``), and never past what the run's budget has left. `isolation`: ``"auto"``
    (a git worktree in a git repository, else a copy), ``"worktree"`` or ``"copy"``. The
    model is forked per attempt when it can be (`harness.extend.ForksAttempts`: a scripted
    fixture's ``attempt`` lines), else shared.
    """

    n: int = 4
    strategy: Strategy = field(factory=_ralph)
    concurrency: int | None = None
    pick: Pick = "first_verified"
    attempt_budget: Budget | None = None
    isolation: Isolation = "auto"
    ranking: Ranking = field(factory=SmallestChange)
    max_verified: int | None = None
    waves: int = 1
    engine: RayAttempts | None = None
    name: str = "best_of"

    def __attrs_post_init__(self) -> None:
        check_positive("n", self.n, integer=True)
        check_positive("concurrency", self.concurrency, integer=True, allow_none=True)
        check_positive("max_verified", self.max_verified, integer=True, allow_none=True)
        check_positive("waves", self.waves, integer=True)
        if self.max_verified is not None and self.pick != "best_verified":
            raise ConfigurationError(
                f"'max_verified' is for pick = 'best_verified' (got pick = {self.pick!r})"
            )
        if self.engine is not None and not isinstance(self.engine, RayAttempts):
            raise ConfigurationError(f"'engine' must be a RayAttempts (got {self.engine!r})")
        if not implements(self.ranking, Ranking):
            raise ConfigurationError(f"'ranking' must be a Ranking (got {self.ranking!r})")
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
    changes: tuple[Change, ...] = ()
    """What the attempt changed, found once when it ended (the winner's are applied)."""
    wave: int = 1
    files: tuple[FileChange, ...] = ()
    """Its `changes` measured in lines (for ``best_verified`` and a wave's digest)."""
    score: AttemptScore | None = None
    rank: int | None = None

    @property
    def changed(self) -> tuple[str, ...]:
        return changed_paths(self.changes)


@define(eq=False)
class _Forward:
    """The sink of one attempt's run: its events go to the run's sinks, wrapped."""

    run: Run
    attempt: int
    reasons: dict[int, str]
    """The check's last reason for each attempt, for a later wave's digest."""

    def emit(self, event: Event) -> None:
        if event.name in ("run.started", "run.halted"):
            return  # ``attempt.started`` and ``attempt.finished`` say these, without run ids
        if isinstance(event, CheckFailed):
            self.reasons[self.attempt] = event.reason
        elif isinstance(event, CheckPassed):
            self.reasons.pop(self.attempt, None)
        self.run.emit(AttemptEvent(self.run.elapsed(), self.attempt, event))


@define(eq=False)
class _Attempts:
    spec: BestOf
    run: Run
    spaces: AttemptWorkspaces | None = None
    pool: BudgetPool | None = None
    outcomes: dict[int, _Outcome] = field(factory=dict)
    tokens: dict[int, CancelToken] = field(factory=dict)
    reasons: dict[int, str] = field(factory=dict)
    verified: int = 0
    first: int | None = None
    enough: str | None = None
    """Why no more attempts start (``max_verified`` were verified), when that is so."""
    error: Exception | None = None
    wave: int = 1
    task: str = ""

    @property
    def stopping(self) -> bool:
        return self.first is not None or self.enough is not None or self.error is not None

    @property
    def total(self) -> int:
        return self.spec.n * self.spec.waves

    async def go(self) -> HaltReason:
        run = self.run
        self.task = run.task
        whole = run.policy.budget if isinstance(run.policy, TerminationPolicy) else Budget()
        per = share_of(whole, self.total)
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
            async with self._engine():
                await self._run_all()
                halt = None if self.error is not None else await self._settle()
        except WorkspaceFailed as exc:  # a full disk: a halt, the user's workspace intact
            self._record(None, applied=False)
            halt = WorkspaceUnwritable(exc.doing, exc.reason)
        except BaseException:
            if not run.attempts:  # cut off (the run's deadline, a cancel): what there was
                for number in range(1, self.wave * self.spec.n + 1):
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

    def _engine(self) -> AbstractAsyncContextManager[object]:
        engine = self.spec.engine
        return engine.open() if engine is not None else nullcontext()

    async def _run_all(self) -> None:
        for wave in range(1, self.spec.waves + 1):
            if wave > 1:
                if self.stopping or any(o.halt.verified for o in self.outcomes.values()):
                    return
                if not await self._next_wave(wave):
                    return
            await self._run_wave(wave)

    async def _next_wave(self, wave: int) -> bool:
        """Tell wave `wave` what failed before it: the digest goes after the task, and into
        ``attempt.wave``. False when nothing ran in the waves before (the budget is spent)."""
        failed = [await self._failed(o) for o in sorted(self.outcomes.values(), key=_number)]
        ran = [f for f in failed if f is not None]
        if not ran:
            return False
        told = digest(ran)
        self.wave, self.task = wave, f"{self.run.task}\n\n{told}"
        first, last = (wave - 1) * self.spec.n + 1, wave * self.spec.n
        self.run.emit(WaveStarted(self.run.elapsed(), wave, first, last, told))
        return True

    async def _run_wave(self, wave: int) -> None:
        n = self.spec.n
        numbers = range((wave - 1) * n + 1, wave * n + 1)
        slots = anyio.Semaphore(self.spec.concurrency or n)
        async with anyio.create_task_group() as group:
            for number in numbers:
                await slots.acquire()
                if self.stopping:
                    slots.release()
                    break
                group.start_soon(self._attempt, number, slots)
        for number in numbers:
            if number not in self.outcomes:
                why = (
                    f"attempt {self.first} was verified first"
                    if self.first is not None
                    else self.enough
                    if self.enough is not None
                    else "another attempt failed"
                )
                by = f"best_of, before it started: {why}"
                self.outcomes[number] = _Outcome(number, None, None, Cancelled(by), wave=wave)
                self._finished(self.outcomes[number])

    async def _failed(self, outcome: _Outcome) -> FailedAttempt | None:
        """What the next wave is told of `outcome` (None: it never ran): its changes in
        lines, and the tests failing in its work as the run's verifier measures them (one
        more run of the check, unless it was measured already)."""
        if outcome.result is None:
            return None
        space = outcome.workspace
        if space is not None and self.spaces is not None and outcome.changes:
            if not outcome.files:
                outcome.files = await measure(
                    outcome.changes, before=self.spaces.workspace, after=space.path
                )
            if outcome.progress is None:
                await self._measure(outcome)
        failing = outcome.progress.failing if outcome.progress is not None else ()
        before = {name for b in self.run.baselines for name in b.failing}
        reason = self.reasons.get(outcome.number) or outcome.reason
        if reason is not None and space is not None:  # where it worked means nothing later
            reason = reason.replace(f"{space.path}/", "").replace(str(space.path), ".")
        return FailedAttempt(
            number=outcome.number,
            wave=outcome.wave,
            ended=outcome.halt.describe().partition("\n")[0],
            changed=outcome.files,
            broke=tuple(t for t in failing if t not in before),
            still_failing=tuple(t for t in failing if t in before),
            reason=reason,
        )

    async def _attempt(self, number: int, slots: anyio.Semaphore) -> None:
        assert self.pool is not None
        try:
            share = self.pool.reserve(number)
            if isinstance(share, HaltReason):
                self.outcomes[number] = _Outcome(number, None, None, share)
                self._finished(self.outcomes[number])
                return
            kind = self.spaces.kind if self.spaces is not None else "shared"
            self.run.emit(AttemptStarted(self.run.elapsed(), number, self.total, kind))
            space = await self.spaces.make(number) if self.spaces is not None else None
            token = CancelToken()
            self.tokens[number] = token
            if self.first is not None:
                token.cancel(f"best_of: attempt {self.first} was verified first")
            elif self.enough is not None:
                token.cancel(f"best_of: {self.enough}")
            if self.spec.engine is None:
                result = await self._harness(number, space, share).run(self.task, cancel=token)
            else:
                remote = await self._remote(self.spec.engine, number, space, share, token)
                if remote is None:
                    self.pool.settle(number, None)
                    halt = Cancelled(token.by or "best_of: cancelled")
                    self.outcomes[number] = _Outcome(number, space, None, halt, wave=self.wave)
                    self._finished(self.outcomes[number])
                    return
                result = remote
            self.pool.settle(number, result)
            self._account(result)
            if result.verified:
                self._verified(number)
            outcome = _Outcome(number, space, result, result.halt_reason, wave=self.wave)
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

    async def _remote(
        self,
        engine: RayAttempts,
        number: int,
        space: AttemptWorkspace | None,
        share: Budget,
        token: CancelToken,
    ) -> RunResult | None:
        """Attempt `number` on a worker, from its workspace's files; what it wrote is laid
        into that workspace and its events reach the run as a local attempt's do. None: it
        was cancelled before it ended."""
        config = self.run.config
        local = self._harness(number, space, share)
        job = RemoteAttempt(
            number=number,
            task=self.task,
            files=await pack(space.path) if space is not None else b"",
            model=local.model,
            policy=local.policy,
            tools=tuple(config.tools.values()),
            strategy=self.spec.strategy,
            clock=config.clock,
            system_prompt=config.system_prompt,
            tool_timeout=config.tool_timeout,
            done_tool=config.done_tool,
            context_window=config.context_window,
        )
        outcome = await engine.run(job, lambda: token.cancelled)
        if outcome is None:
            return None
        if space is not None:
            await lay_into(space.path, outcome)
        forward = _Forward(self.run, number, self.reasons)
        for event in outcome.events:
            forward.emit(event)
        return outcome.result

    def _verified(self, number: int) -> None:
        """Attempt `number` was verified: with ``first_verified`` it is the winner, with
        ``max_verified`` it may be the last one needed; then the others stop now, not after
        this one is looked at."""
        spec = self.spec
        if spec.pick == "first_verified" and self.first is None:
            self.first = number
            why = f"attempt {number} was verified first"
        elif spec.max_verified is not None and self.enough is None:
            self.verified += 1
            if self.verified < spec.max_verified:
                return
            self.enough = why = f"{self.verified} attempts were verified (max_verified)"
        else:
            return
        for other, held in self.tokens.items():
            if other != number:
                held.cancel(f"best_of: {why}")

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
            sinks=[_Forward(run, number, self.reasons)],
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
        """What the attempt changed; for ``best_verified``, a verified attempt's score; for
        ``best_progress``, how far along the check measures its work (with the run's
        verifier, as at any claim): one more run of the check per attempt, which the other
        picks spare (their winner is measured by the final check)."""
        space = outcome.workspace
        if space is None or self.spaces is None or isinstance(outcome.halt, Cancelled):
            return
        outcome.changes = tuple(await self.spaces.changes(space))
        if self.spec.pick == "best_verified" and outcome.halt.verified:
            outcome.files = await measure(
                outcome.changes, before=self.spaces.workspace, after=space.path
            )
        if self.spec.pick == "best_progress":
            await self._measure(outcome)

    async def _measure(self, outcome: _Outcome) -> None:
        """How far along the check measures `outcome`'s work, with the run's verifier."""
        assert outcome.workspace is not None
        space, run = outcome.workspace, self.run
        policy = run.policy.start_session(clock=run.clock)
        snapshot = evolve(run.snapshot(), workspace=space.path)
        # The run's verifier, recorded nowhere: the attempt's own run reported its claims.
        assessed = await run.judge(snapshot, policy.assess, record=False)
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
        if self.spec.pick == "best_progress":
            return max(verified, key=lambda o: (*_rank(o.progress), -o.number))
        return self._ranked(verified)

    def _ranked(self, verified: list[_Outcome]) -> _Outcome:
        """``best_verified``: the verified attempts scored and ordered by the ranking
        (``attempt.ranked``); the first."""
        run, ranking = self.run, self.spec.ranking
        by_number = {o.number: o for o in verified}
        for o in verified:
            usage = o.result.usage if o.result is not None else Usage()
            o.score = score(o.number, o.files, task=run.task, protected=run.protected, usage=usage)
        order = ranked(ranking, [o.score for o in verified if o.score is not None])
        for place, scored in enumerate(order, 1):
            by_number[scored.attempt].rank = place
        run.emit(AttemptsRanked(run.elapsed(), ranking.name, order))
        return by_number[order[0].attempt]

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
        changes = winner.changes
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
        run.emit(AttemptApplied(run.elapsed(), winner.number, winner.changed))
        self._record(winner, applied=True)
        return Completed()

    def _unverified(self) -> NoAttemptVerified:
        """The halt when no attempt was verified: naming the one measured furthest along
        (``best_progress``), else what stopped the last one that ran."""
        ran = [o for o in self.outcomes.values() if o.result is not None]
        measured = [o for o in ran if o.progress is not None]
        if measured:
            best = max(measured, key=lambda o: (*_rank(o.progress), -o.number))
            why = best.reason or best.halt.describe()
            return NoAttemptVerified(len(self.outcomes), best.number, why)
        if not ran:
            last = max(self.outcomes.values(), key=lambda o: o.number)
            return NoAttemptVerified(len(self.outcomes), 0, last.halt.describe())
        last = max(ran, key=lambda o: o.number)
        why = f"attempt {last.number}: {last.halt.describe()}"
        return NoAttemptVerified(len(self.outcomes), 0, why)

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
                    score=o.score,
                    rank=o.rank,
                    wave=o.wave,
                )
            )


def _number(outcome: _Outcome) -> int:
    return outcome.number


def _rank(progress: WorkProgress | None) -> tuple[float, int]:
    return (-1.0, -1) if progress is None else (progress.fraction, progress.done)
