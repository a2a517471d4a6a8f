"""Composition: `AllOf` and `AnyOf` are values, and `a & b`, `a | b` build them.

`AllOf` asks its checks in order and stops at the first reason, so cheap checks go first;
`AnyOf` stops at the first pass and otherwise joins every reason. A check that raises counts
as "not complete" with the error as its reason (fail closed), so one broken alternative
cannot sink an `AnyOf` whose other alternative holds, nor let an `AllOf` pass. Nested
combinations of the same kind flatten: ``(a & b) & c == AllOf.of(a, b, c)``.
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
    """Complete when every check is; the first reason (in order) is the verdict.

    With `parallel`, the checks are asked at once (`checks._parallel`), for checks that
    share no state; the verdict is the same first reason in declared order."""

    checks: tuple[CompletionCheck, ...] = field(converter=_all_of)
    parallel: bool = field(default=False, kw_only=True)

    @classmethod
    def of(cls, *checks: CompletionCheck) -> AllOf:
        return cls(checks)

    async def prepare(self, state: SessionStateSnapshot) -> tuple[Baseline, ...]:
        return await _prepare_all(self.checks, state)

    async def check(self, state: SessionStateSnapshot) -> str | None:
        if self.parallel:
            from ._parallel import first_reason  # only a parallel AllOf needs it

            return await first_reason(self.checks, state)
        for check in self.checks:
            reason = (await ask(check, state)).reason
            if reason is not None:
                return reason
        return None

    async def measure(self, state: SessionStateSnapshot) -> Assessment:
        """Every check's answer (none skipped, so the progress is whole): the first reason,
        and the sum of the progress the checks report."""
        if self.parallel:
            from ._parallel import every_answer  # only a parallel AllOf needs it

            return await every_answer(self.checks, state)
        answers = [await ask(check, state) for check in self.checks]
        reason = next((a.reason for a in answers if a.reason is not None), None)
        return Assessment(reason, WorkProgress.sum_of([a.progress for a in answers]))

    def description(self) -> str:
        if len(self.checks) == 1:
            return self.checks[0].description()
        return _bullets("All of these must hold:", self.checks)


@frozen
class AnyOf(Combinable):
    """Complete when at least one check is; otherwise every check's reason, numbered."""

    checks: tuple[CompletionCheck, ...] = field(converter=_any_of)

    @classmethod
    def of(cls, *checks: CompletionCheck) -> AnyOf:
        return cls(checks)

    async def prepare(self, state: SessionStateSnapshot) -> tuple[Baseline, ...]:
        return await _prepare_all(self.checks, state)

    async def check(self, state: SessionStateSnapshot) -> str | None:
        reasons: list[str] = []
        for check in self.checks:
            reason = (await ask(check, state)).reason
            if reason is None:
                return None
            reasons.append(reason)
        return _alternatives(reasons)

    async def measure(self, state: SessionStateSnapshot) -> Assessment:
        """As `check` (the first alternative that holds ends it), with the progress of the
        alternative furthest along."""
        answers: list[CheckVerdict] = []
        for check in self.checks:
            answer = await ask(check, state)
            if answer.reason is None:
                return Assessment(None, answer.progress)
            answers.append(answer)
        reasons = [a.reason for a in answers if a.reason is not None]
        return Assessment(
            _alternatives(reasons), WorkProgress.best_of([a.progress for a in answers])
        )

    def description(self) -> str:
        if len(self.checks) == 1:
            return self.checks[0].description()
        return _bullets("At least one of these must hold:", self.checks)


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
