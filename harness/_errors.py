"""Exceptions raised by the harness.

The tree::

    HarnessError
    ├── ConfigurationError (also ValueError)   the caller built something wrong
    ├── FixtureError                           a JSONL fixture is malformed or diverged
    │   ├── FixtureExhausted                   the model was asked for more than the script has
    │   ├── FixtureAssertionError              a request did not match the line's `expect`
    │   └── FixtureUnconsumed                  the run ended with script lines left over
    └── ModelError                             a model provider failed (typed, keeps context)

A run that stops for a reason of its own (budget, sensor, completion) never raises: it returns a
`RunResult`. Exceptions are for programmer errors, broken fixtures, and cancellation from outside.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._result import RunResult


class HarnessError(Exception):
    """Base class of every exception the harness raises on purpose."""


class ConfigurationError(HarnessError, ValueError):
    """The caller configured something that cannot work (a programmer error)."""


class FixtureError(HarnessError):
    """A JSONL fixture is malformed, ran out, or did not match the run.

    The message names the file and the line (and the field, where one is at fault).
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        self.result: RunResult | None = None
        where = ""
        if self.path is not None:
            where = self.path if line is None else f"{self.path}:{line}"
        if field is not None:
            where = f"{where} field {field!r}" if where else f"field {field!r}"
        super().__init__(f"{where}: {message}" if where else message)


class FixtureExhausted(FixtureError):
    """The model was called more times than the fixture has lines."""


class FixtureAssertionError(FixtureError):
    """A request did not satisfy the `expect` block of the fixture line that answers it."""


class FixtureUnconsumed(FixtureError):
    """The run ended while fixture lines were still waiting to be used."""


class ModelError(HarnessError):
    """A model provider call failed.

    `kind` is one of ``"auth"``, ``"bad_request"``, ``"rate_limit"``, ``"server"``,
    ``"timeout"``, ``"connection"``, ``"malformed"``, ``"recording"`` (a
    `RecordingModelClient` could not write its file) or ``"other"``; `retryable` says whether
    trying again could help. The loop turns it into a `ModelFailed` halt that keeps the
    transcript; it never escapes `Harness.run`.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "other",
        retryable: bool = False,
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        self.status_code = status_code
        self.retry_after = retry_after


# A traceback names an error by its module: the public one a user imports it from, not this
# private module (``harness.FixtureError``, not ``harness._errors.FixtureError``); pickling
# finds them there too.
for _error in (
    HarnessError,
    ConfigurationError,
    FixtureError,
    FixtureExhausted,
    FixtureUnconsumed,
    ModelError,
):
    _error.__module__ = "harness"
FixtureAssertionError.__module__ = "harness.testing"
