"""Fixtures for tests that must hold on every clock.

Both backends with a `FakeClock`, and trio once more with the real clock under trio's
`MockClock`, so a behaviour is proven on the injected clock and on the event loop's own.
A module opts in with::

    anyio_backend = pytest.fixture(params=CLOCK_BACKENDS)(clock_backend)
    clock = pytest.fixture(clock_for)
"""

from __future__ import annotations

from typing import Any

import pytest
import trio.testing

from harness.extend import Clock, SystemClock
from harness.testing import FakeClock

CLOCK_BACKENDS = ["asyncio", "trio", "trio-mockclock"]


def clock_backend(request: pytest.FixtureRequest) -> Any:
    """Both backends with a FakeClock, and trio once more with the real clock under MockClock."""
    if request.param == "trio-mockclock":
        return ("trio", {"clock": trio.testing.MockClock(autojump_threshold=0)})
    return request.param


def clock_for(anyio_backend: Any) -> Clock:
    """The clock a test's run reads: FakeClock, or SystemClock driven by trio's MockClock."""
    return SystemClock() if isinstance(anyio_backend, tuple) else FakeClock()
