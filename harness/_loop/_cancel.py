"""`CancelToken`: ask a run to stop from outside and get a `RunResult` back, not an exception.

Cancelling a task that awaits `Harness.run` (its cancel scope, its task group) propagates
untouched, as anyio's cancellation always does: the caller asked to stop waiting and gets no
result. A `CancelToken` handed to `Harness.run(task, cancel=token)` asks for something else:
the run stops where it is, as its own wall-time deadline would stop it (the model call, tools
and checks in flight are cancelled, their processes killed) and returns its result, halted
`Cancelled(by)` with the transcript so far. The command line cancels one on SIGTERM or SIGINT.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

import anyio
from attrs import define, field

from .._clock import DeadlineScope


@define(eq=False)
class CancelToken:
    """A request to stop, shared between whoever may ask and the runs that honour it.

    `cancel` is called on the thread of the event loop the runs use (from elsewhere, through
    `anyio.from_thread.run_sync(token.cancel, token=...)`). It may come before a run starts,
    which then stops at once; the first `by` is kept.
    """

    _by: str | None = field(default=None, init=False)
    _scopes: list[anyio.CancelScope] = field(factory=list, init=False, repr=False)

    @property
    def cancelled(self) -> bool:
        return self._by is not None

    @property
    def by(self) -> str | None:
        """Who asked, in words (``"SIGTERM"``), once `cancel` was called."""
        return self._by

    def cancel(self, by: str = "the caller") -> None:
        """Stop every run that holds this token."""
        if self._by is None:
            self._by = by
        for scope in self._scopes:
            scope.cancel()

    def scope(self) -> DeadlineScope:
        """A cancel scope that `cancel` cancels (at once, if it already was)."""
        # A generator context manager swallows its scope's cancel at run time, but typeshed
        # types its __exit__ as `bool | None`, which would make code after the block unreachable
        # to mypy (the same reason as `FakeClock.deadline_scope`).
        return cast("DeadlineScope", self._scope())

    @contextmanager
    def _scope(self) -> Iterator[anyio.CancelScope]:
        with anyio.CancelScope() as scope:
            if self._by is not None:
                scope.cancel()
            self._scopes.append(scope)
            try:
                yield scope
            finally:
                self._scopes.remove(scope)
