"""An HTTP transport for MCP servers whose response bodies close every iterator they open.

httpx2 (2.17) reads a response body through two async generators, its own
``AsyncResponseStream.__aiter__`` and httpcore2's ``HTTP11ConnectionByteStream.__aiter__``
inside it, and never closes the inner one when the reader stops early. The MCP SDK's
streamable-HTTP client stops early at every server-sent event that completes a request (it
leaves the ``async for`` and closes the response), so the inner generator is left to the
garbage collector: asyncio finalizes it silently, trio warns that it was never closed, and under
``filterwarnings = error`` a test fails at a random later point. Upstream: pydantic/httpx2
pull request 1212 ("Close nested async response iterators on early exit"), open.

`closing_transport` wraps httpx2's default transport so each response's body is read by one
generator of ours that holds httpcore2's iterator and closes it on the way out, early or not;
httpx2 closes our generator (its ``BoundAsyncStream`` does). Errors are mapped to httpx2's
exceptions as httpx2 maps them. Where a later httpx2 no longer has the inner stream this reads,
the response is left as it comes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager
from typing import Any, cast

import httpx2

_map_errors: Callable[[], AbstractContextManager[None]] | None
try:  # the mapping httpx2 applies to httpcore2's errors, so ours raise the same exceptions
    from httpx2._transports.default import map_httpcore_exceptions as _map_errors
except ImportError:  # pragma: no cover - a later httpx2 without it reads its own bodies
    _map_errors = None


class _ClosingBody(httpx2.AsyncByteStream):
    """A response body read through httpcore2's iterator, which is closed when reading ends."""

    def __init__(self, response_stream: httpx2.AsyncByteStream, core: Any) -> None:
        self._response_stream = response_stream
        self._core = core

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert _map_errors is not None
        with _map_errors():
            parts = self._core.__aiter__()
            try:
                async for part in parts:
                    yield part
            finally:
                close = getattr(parts, "aclose", None)
                if close is not None:
                    await close()

    async def aclose(self) -> None:
        await self._response_stream.aclose()


class _ClosingTransport(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        core = getattr(response.stream, "_httpcore_stream", None)
        if core is not None and _map_errors is not None:
            response.stream = _ClosingBody(cast(httpx2.AsyncByteStream, response.stream), core)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def closing_transport() -> httpx2.AsyncBaseTransport:
    """httpx2's default transport, with response bodies that close what they open."""
    return _ClosingTransport(httpx2.AsyncHTTPTransport())
