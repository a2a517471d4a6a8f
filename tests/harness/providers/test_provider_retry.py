"""The retry policy of provider clients: what is retried, how long it waits, when it stops."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness import ConfigurationError, ModelError, RetryPolicy
from harness._providers import retry_after_seconds
from harness._providers._retry import call_with_retry
from harness.testing import FakeClock

pytestmark = pytest.mark.anyio


class Flaky:
    """Raises the given errors in order, then answers "ok"; counts its calls."""

    def __init__(self, *errors: ModelError) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def server(retry_after: float | None = None) -> ModelError:
    return ModelError(
        "boom", kind="server", retryable=True, status_code=500, retry_after=retry_after
    )


async def retry(attempt: Flaky, clock: FakeClock, deadline: float | None = None, **kw: Any) -> str:
    policy = RetryPolicy(**{"initial_wait": 1.0, "jitter": 0.0, **kw})
    return await call_with_retry(attempt, policy=policy, clock=clock, deadline=deadline)


async def test_waits_double_up_to_the_backoff_cap() -> None:
    """Backoff waits 1, 2, 4 and then stays at max_backoff."""
    clock = FakeClock()
    attempt = Flaky(*[server() for _ in range(4)])
    assert await retry(attempt, clock, max_attempts=5, max_backoff=5.0) == "ok"
    assert clock.now() == 1 + 2 + 4 + 5
    assert attempt.calls == 5


async def test_retry_after_wins_when_it_is_longer_than_the_backoff() -> None:
    """The wait is the larger of Retry-After and the backoff."""
    clock = FakeClock()
    assert await retry(Flaky(server(retry_after=0.5), server(retry_after=10.0)), clock) == "ok"
    assert clock.now() == 1.0 + 10.0


async def test_jitter_adds_at_most_its_width() -> None:
    """With jitter the first wait lies between the backoff and backoff + jitter."""
    clock = FakeClock()
    await retry(Flaky(server()), clock, jitter=0.5)
    assert 1.0 <= clock.now() <= 1.5


async def test_errors_that_are_not_retryable_are_raised_at_once() -> None:
    """A non-retryable error is raised unchanged after a single attempt."""
    clock = FakeClock()
    error = ModelError("no", kind="auth")
    attempt = Flaky(error)
    with pytest.raises(ModelError) as caught:
        await retry(attempt, clock)
    assert caught.value is error
    assert attempt.calls == 1
    assert clock.now() == 0.0


async def test_attempts_are_bounded() -> None:
    """After max_attempts the last error is raised, saying so, with its fields kept."""
    clock = FakeClock()
    attempt = Flaky(*[server() for _ in range(5)])
    with pytest.raises(ModelError, match=r"gave up after 2 attempt\(s\)") as caught:
        await retry(attempt, clock, max_attempts=2)
    assert (caught.value.kind, caught.value.retryable, caught.value.status_code) == (
        "server",
        True,
        500,
    )
    assert attempt.calls == 2


async def test_a_wait_past_the_deadline_is_not_taken() -> None:
    """The retry stops when now + the next wait reaches the deadline."""
    clock = FakeClock()
    attempt = Flaky(server(), server(), server())
    with pytest.raises(ModelError, match="deadline"):
        await retry(attempt, clock, deadline=2.5, max_attempts=10)
    assert clock.now() == 1.0
    assert attempt.calls == 2


async def test_a_single_wait_longer_than_max_wait_gives_up() -> None:
    """A Retry-After beyond max_wait is not waited for."""
    clock = FakeClock()
    with pytest.raises(ModelError, match="longer than max_wait"):
        await retry(Flaky(server(retry_after=3600)), clock, max_wait=60.0)
    assert clock.now() == 0.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        (
            {
                "retry-after": "Wed, 21 Oct 2026 07:28:30 GMT",
                "date": "Wed, 21 Oct 2026 07:28:00 GMT",
            },
            30.0,
        ),
        ({"retry-after": "Wed, 21 Oct 2026 07:28:30 GMT"}, None),
        ({"retry-after": "soon", "date": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),
        ({"retry-after": "-3"}, 0.0),
        ({}, None),
    ],
)
def test_retry_after_is_read_from_seconds_milliseconds_or_a_dated_reply(
    headers: dict[str, str], expected: float | None
) -> None:
    """Seconds, milliseconds and HTTP dates (against the reply's own Date) are understood."""
    assert retry_after_seconds(headers) == expected


NOW = "Wed, 21 Oct 2026 07:28:00 GMT"


@pytest.mark.parametrize(
    "retry_after",
    [
        "Wed, 21 Oct 2026 07:28:30 GMT",  # IMF-fixdate
        "Wed, 21 Oct 2026 07:28:30 -0000",  # RFC 5322's "unknown zone"
        "Wed, 21 Oct 2026 07:28:30",  # no zone at all
        "Wed, 21 Oct 2026 09:28:30 +0200",  # a numeric zone
        "Wednesday, 21-Oct-26 07:28:30 GMT",  # RFC 850
        "Wed Oct 21 07:28:30 2026",  # asctime
    ],
)
@pytest.mark.parametrize(
    "date", [NOW, "Wed, 21 Oct 2026 07:28:00 -0000", "Wed Oct 21 07:28:00 2026"]
)
def test_every_http_date_form_is_read_as_utc(retry_after: str, date: str) -> None:
    """Every date form RFC 9110 allows, with or without a zone, is a time in GMT."""
    assert retry_after_seconds({"retry-after": retry_after, "date": date}) == 30.0


@pytest.mark.parametrize(
    "retry_after",
    ["Wed, 99 Oct 2026 07:28:30 GMT", "Wed, 21 Oct 2026 25:61:30 GMT", "1e400", "nan", "", " "],
)
def test_unreadable_retry_after_is_none(retry_after: str) -> None:
    """A date or number that cannot be read asks for no particular wait."""
    assert retry_after_seconds({"retry-after": retry_after, "date": NOW}) is None


@given(st.text(), st.text(), st.text())
def test_retry_after_never_raises(retry_after: str, date: str, millis: str) -> None:
    """Whatever a server puts in these headers, the answer is a wait >= 0 or None."""
    headers = {"retry-after": retry_after, "date": date, "retry-after-ms": millis}
    value = retry_after_seconds(headers)
    assert value is None or value >= 0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"max_attempts": 0}, "max_attempts"),
        ({"max_attempts": True}, "max_attempts"),
        ({"initial_wait": -1}, "initial_wait"),
        ({"jitter": "1"}, "jitter"),
        ({"max_wait": 0}, "max_wait"),
    ],
)
def test_bad_policies_are_refused_by_name(kwargs: dict[str, Any], name: str) -> None:
    """Each invalid setting names itself."""
    with pytest.raises(ConfigurationError, match=name):
        RetryPolicy(**kwargs)


def test_policies_from_config_name_the_table() -> None:
    """An unknown key in a retry table is refused with the table's path."""
    assert RetryPolicy.from_config({"max_attempts": 2}, where="m.retry").max_attempts == 2
    with pytest.raises(
        ConfigurationError, match=r"m\.retry: unknown key 'attempts' .*did you mean 'max_attempts'"
    ):
        RetryPolicy.from_config({"attempts": 2}, where="m.retry")
    with pytest.raises(ConfigurationError, match=r"m\.retry: 'jitter'"):
        RetryPolicy.from_config({"jitter": -1}, where="m.retry")
    assert RetryPolicy.none().max_attempts == 1
