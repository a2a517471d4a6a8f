"""Why a run stopped: `HaltReason` and its kinds, and the one reader that turns a
transcript's ``reason`` object back into its kind (`halt_from_dict`).

Apart from what a run returns (`_result`) because a policy and a budget name the halts they
decide, and a stop hook that builds a policy to read a spec runs no session and needs none of
the results.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from attrs import field, fields, frozen


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
