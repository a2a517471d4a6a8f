"""The `ModelClient` protocol: one async call from a request to an assistant turn, and the
optional capabilities a client may declare by implementing them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ._clock import Clock

if TYPE_CHECKING:
    from ._messages import ModelRequest, ModelResponse


@runtime_checkable
class ModelClient(Protocol):
    """Anything that turns a `ModelRequest` into a `ModelResponse`.

    Raise `ModelError` for provider failures; the loop halts with `ModelFailed` and keeps the
    transcript. A client may also implement `ReadsClock`, `ChecksConsumed`, `KnowsPrices` and
    `ForksAttempts`.
    """

    async def complete(self, request: ModelRequest) -> ModelResponse: ...


@runtime_checkable
class ReadsClock(Protocol):
    """A client that reads time (a scripted delay, a retry deadline) from the run's clock."""

    def bind_clock(self, clock: Clock) -> None:
        """Use `clock` from now on; the harness calls this before the first request."""
        ...


@runtime_checkable
class ChecksConsumed(Protocol):
    """A client that can tell, when a run ends, whether it was used as it expected (a
    scripted client with lines left over raises `FixtureUnconsumed`)."""

    def verify_consumed(self) -> None: ...


@runtime_checkable
class KnowsPrices(Protocol):
    """A client that can say whether it knows its prices; one that does not is refused up
    front when a cost budget is set."""

    @property
    def prices_known(self) -> bool: ...


@runtime_checkable
class ForksAttempts(Protocol):
    """A client that gives each attempt of a best-of run a client of its own, seeded apart
    (a scripted client: the fixture's lines for that attempt). A client that does not
    implement it is shared by the attempts."""

    def for_attempt(self, attempt: int) -> ModelClient:
        """The client attempt `attempt` (from 1) uses."""
        ...
