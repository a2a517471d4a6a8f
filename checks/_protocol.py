"""The `CompletionCheck` protocol: None when the work is done, otherwise what is missing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from harness import SessionStateSnapshot

if TYPE_CHECKING:
    from ._baseline import SuiteBaseline
    from ._last_verdict import LastVerdict


@runtime_checkable
class CompletionCheck(Protocol):
    """Decides whether the agent's claim of done holds.

    `check` returns None when the work is complete, or a short reason naming what is still
    missing; the reason is injected into the agent's next turn. `description` tells the agent
    up front what "done" means. A check that raises or times out counts as "not complete".
    """

    async def check(self, state: SessionStateSnapshot) -> str | None: ...

    def description(self) -> str: ...


@runtime_checkable
class PreparesForRun(Protocol):
    """A check that records a baseline when the run starts (before any agent action).

    `prepare` may return what it recorded, a `harness.Baseline` (or a tuple of them, for a
    composition), which the run writes to its transcript and lists on the result. A check
    that returns None is named in a ``run.warning`` at the start (a wrapper that forgets to
    return its inner check's baseline would drop it silently), unless its `baseline`
    attribute is False: it records nothing the run should keep.
    """

    async def prepare(self, state: SessionStateSnapshot) -> object: ...


@runtime_checkable
class KeepsBaseline(Protocol):
    """A check whose baseline can outlive the process that took it (`TestSuiteCheck` with
    ``baseline = true``): the stop hook, a fresh process at every stop, takes it at the first
    stop with `prepare`, stores `baseline_for(run_id)`, and hands it back to later stops'
    checks with `restore_baseline` (a `ValueError` when the baseline is not of this check's
    command). `baseline` says whether this check takes one at all."""

    baseline: bool

    async def prepare(self, state: SessionStateSnapshot) -> object: ...

    def baseline_for(self, run_id: str) -> SuiteBaseline | None: ...

    def restore_baseline(self, run_id: str, baseline: SuiteBaseline) -> None: ...


@runtime_checkable
class KeepsLastVerdict(Protocol):
    """A check whose claims start with what its last verdict found (`TestSuiteCheck`, with
    or without a baseline), which can outlive the process that reached it: the stop hook, a
    fresh process at every stop, stores `last_verdict_for(run_id)` after each stop and hands
    it back to the next stop's check with `restore_last_verdict`. `fast_reject` says whether
    the check uses it at all.

    It only decides what runs first, never what is accepted, so a stored value that cannot be
    used is ignored (with a warning) rather than an error, unlike a stored baseline."""

    fast_reject: bool

    def last_verdict_for(self, run_id: str) -> LastVerdict | None: ...

    def restore_last_verdict(self, run_id: str, verdict: LastVerdict) -> None: ...
