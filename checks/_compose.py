"""Composition: `AllOf` and `AnyOf` are values, and `a & b`, `a | b` build them.

One rule: `AllOf` asks its checks in order and stops at the first reason, so cheap checks go
first, unless progress is asked for (``AllOf(checks, progress=True)``: every part runs, so
the progress of the whole can be summed); `AnyOf` stops at the first pass and otherwise joins
every reason. A check that raises counts as "not complete" with the error as its reason (fail
closed), so one broken alternative cannot sink an `AnyOf` whose other alternative holds, nor
let an `AllOf` pass; a part that could not judge the work at all (it raised, or its command
could not start) makes the whole say so, with the part's error (`CheckVerdict.error`), when
the whole cannot pass without it. Nested combinations of the same kind flatten:
``(a & b) & c == AllOf.of(a, b, c)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from attrs import field, frozen

from harness import ConfigurationError, SessionStateSnapshot
from harness.checkpoints import WorkProgress
from harness.extend import implements

from ._progress import Assessment
from ._protocol import CompletionCheck, PreparesForRun
from ._run_check import CheckVerdict, ask

if TYPE_CHECKING:
    from pathlib import Path

    from harness.extend import Baseline


def as_check(value: object) -> CompletionCheck:
    """`value` if it satisfies the `CompletionCheck` protocol, else a `ConfigurationError`."""
    if not implements(value, CompletionCheck):
        raise ConfigurationError(
            f"a completion check needs async check(state) and description() (got {value!r})"
        )
    return value


class Combinable:
    """Gives a check the ``&`` (all of) and ``|`` (any of) operators."""

    __slots__ = ()

    def __and__(self, other: object) -> AllOf:
        return AllOf.of(as_check(self), as_check(other))

    def __rand__(self, other: object) -> AllOf:
        return AllOf.of(as_check(other), as_check(self))

    def __or__(self, other: object) -> AnyOf:
        return AnyOf.of(as_check(self), as_check(other))

    def __ror__(self, other: object) -> AnyOf:
        return AnyOf.of(as_check(other), as_check(self))


def _bullets(title: str, checks: Iterable[CompletionCheck]) -> str:
    lines = [title]
    for check in checks:
        first, *rest = check.description().splitlines() or [""]
        lines.append(f"- {first}")
        lines.extend(f"  {line}" for line in rest)
    return "\n".join(lines)


async def _prepare_all(
    checks: Iterable[CompletionCheck], state: SessionStateSnapshot
) -> tuple[Baseline, ...]:
    """Prepare every check that prepares; the baselines they recorded, in order."""
    # Loaded here: only a run whose checks prepare needs the verifier's records.
    from harness.extend import Baseline

    found: list[Baseline] = []
    for check in checks:
        if implements(check, PreparesForRun):
            recorded = await check.prepare(state)
            if isinstance(recorded, Baseline):
                found.append(recorded)
            elif isinstance(recorded, tuple):
                found.extend(b for b in recorded if isinstance(b, Baseline))
    return tuple(found)


def _preflight_all(checks: Iterable[CompletionCheck], workspace: Path | None) -> None:
    for check in checks:
        preflight = getattr(check, "preflight", None)
        if preflight is not None:
            preflight(workspace)


def _flatten(value: object, kind: type[AllOf | AnyOf]) -> tuple[CompletionCheck, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigurationError(f"{kind.__name__} takes a sequence of checks (got {value!r})")
    flat: list[CompletionCheck] = []
    for item in value:
        check = as_check(item)
        # A parallel AllOf stays whole: flattened into a sequential one, it would lose that.
        if isinstance(check, kind) and not getattr(check, "parallel", False):
            flat.extend(check.checks)
        else:
            flat.append(check)
    if not flat:
        raise ConfigurationError(f"{kind.__name__} needs at least one check (got none)")
    return tuple(flat)


def _all_of(value: object) -> tuple[CompletionCheck, ...]:
    return _flatten(value, AllOf)


def _any_of(value: object) -> tuple[CompletionCheck, ...]:
    return _flatten(value, AnyOf)


@frozen
class AllOf(Combinable):
    """Complete when every check is; the first reason (in order) is the verdict, and the
    checks after it are not asked. With `progress`, every check is asked, so that the progress
    of the whole (the sum of the parts') can be measured: what a rollback on regression needs.

    With `parallel`, the checks are asked at once, for checks that share
    no state; the verdict is the same first reason in declared order, and the checks still
    running once it is known are cancelled (unless `progress` asks for every answer).
    """

    checks: tuple[CompletionCheck, ...] = field(converter=_all_of)
    progress: bool = field(default=False, kw_only=True)
    parallel: bool = field(default=False, kw_only=True)

    @classmethod
    def of(cls, *checks: CompletionCheck, progress: bool = False) -> AllOf:
        return cls(checks, progress=progress)

    def preflight(self, workspace: Path | None) -> None:
        _preflight_all(self.checks, workspace)

    async def prepare(self, state: SessionStateSnapshot) -> tuple[Baseline, ...]:
        return await _prepare_all(self.checks, state)

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return (await self.measure(state)).reason

    async def measure(self, state: SessionStateSnapshot) -> Assessment:
        """The first reason (None: every check passed), and the sum of the progress the
        checks report when each was asked: always when they all pass, and with `progress`
        whatever they say (otherwise, after a reason, the whole is not measured)."""
        asked: list[CheckVerdict | None] = []
        if self.parallel:
            from ._parallel import answers_at_once  # only a parallel AllOf needs it

            asked = await answers_at_once(self.checks, state, every=self.progress)
        else:
            for check in self.checks:
                verdict = await ask(check, state)
                asked.append(verdict)
                if _decides(verdict, self.progress):
                    break
        answers: list[CheckVerdict] = []
        for answer in asked:
            if answer is None:  # cancelled once the verdict was known, so after it
                break
            if answer.error is not None:  # it could not judge: nor can the whole
                return Assessment(answer.reason, error=answer.error)
            answers.append(answer)
            if answer.reason is not None and not self.progress:
                return Assessment(answer.reason, flaky=_flaky_of(answers))
        reason = next((a.reason for a in answers if a.reason is not None), None)
        progress = WorkProgress.sum_of([a.progress for a in answers])
        return Assessment(reason, progress, flaky=_flaky_of(answers))

    def description(self) -> str:
        if len(self.checks) == 1:
            return self.checks[0].description()
        return _bullets("All of these must hold:", self.checks)


def _flaky_of(answers: list[CheckVerdict]) -> tuple[str, ...]:
    """The flaky tests the parts report, each once."""
    return tuple(dict.fromkeys(n for a in answers for n in a.flaky))


def _decides(answer: CheckVerdict, progress: bool) -> bool:
    """Whether `answer` ends an `AllOf`'s asking: an error always, a reason unless every
    check's progress is wanted."""
    return answer.error is not None or (answer.reason is not None and not progress)


@frozen
class AnyOf(Combinable):
    """Complete when at least one check is; otherwise every check's reason, numbered."""

    checks: tuple[CompletionCheck, ...] = field(converter=_any_of)

    @classmethod
    def of(cls, *checks: CompletionCheck) -> AnyOf:
        return cls(checks)

    def preflight(self, workspace: Path | None) -> None:
        _preflight_all(self.checks, workspace)

    async def prepare(self, state: SessionStateSnapshot) -> tuple[Baseline, ...]:
        return await _prepare_all(self.checks, state)

    async def check(self, state: SessionStateSnapshot) -> str | None:
        return (await self.measure(state)).reason

    async def measure(self, state: SessionStateSnapshot) -> Assessment:
        """The first alternative that holds ends it; otherwise every reason, with the
        progress of the alternative furthest along. When no alternative could judge the work
        at all, the first one's error is the whole's."""
        answers: list[CheckVerdict] = []
        for check in self.checks:
            answer = await ask(check, state)
            if answer.reason is None:
                return Assessment(None, answer.progress, flaky=answer.flaky)
            answers.append(answer)
        if all(a.error is not None for a in answers):
            return Assessment(answers[0].reason, error=answers[0].error)
        reasons = [a.reason for a in answers if a.reason is not None]
        return Assessment(
            _alternatives(reasons), WorkProgress.best_of([a.progress for a in answers])
        )

    def description(self) -> str:
        if len(self.checks) == 1:
            return self.checks[0].description()
        return _bullets("At least one of these must hold:", self.checks)


def measures_progress(check: CompletionCheck) -> bool:
    """Whether asking `check` gives the progress of the work: it `measure`s, and (an `AllOf`)
    asks every part (`progress=True`) of which one measures, or (an `AnyOf`) one of its
    alternatives measures. A wrapper without `measure` does not, whatever it wraps."""
    if isinstance(check, AllOf):
        return check.progress and any(measures_progress(c) for c in check.checks)
    if isinstance(check, AnyOf):
        return any(measures_progress(c) for c in check.checks)
    return getattr(check, "measure", None) is not None


def _alternatives(reasons: list[str]) -> str:
    """Every alternative's reason, numbered (one alone as it is)."""
    if len(reasons) == 1:
        return reasons[0]
    lines = [f"none of the {len(reasons)} alternatives holds:"]
    for number, reason in enumerate(reasons, 1):
        first, *rest = reason.splitlines() or [""]
        lines.append(f"{number}. {first}")
        lines.extend(f"   {line}" for line in rest)
    return "\n".join(lines)
