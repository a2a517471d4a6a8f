"""What the OpenAI and Anthropic clients share: keys from the environment, prices, retries,
one reused SDK client per event loop, and typed, redacted errors.

API keys are read from an environment variable at each call and handed to the SDK client;
no client prints or logs one, and any text a provider sends that echoes it is redacted (see
`_responses`). The SDK client is built once per event loop and reused, so its connections are
kept open between calls (see `_loop_clients`). The SDK's own retries are off
(``max_retries=0``): `call_with_retry` does the retrying, on the harness's clock and within
the request's deadline.
"""

from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import ModuleType, TracebackType
from typing import Any, Self

from .._clock import Clock, SystemClock
from .._errors import ConfigurationError, ModelError
from .._messages import ModelRequest, ModelResponse
from ._loop_clients import LoopClients
from ._pricing import ModelPrice, PriceTable
from ._responses import NO_KEY, map_sdk_error, not_json, read_body
from ._retry import RetryPolicy, call_with_retry


class ProviderClient(ABC):
    """Base of the SDK-backed clients; subclasses map requests and responses."""

    provider = "provider"
    sdk_module = ""
    extra = ""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key_env: str | None,
        price: ModelPrice | None,
        prices: PriceTable | None,
        retry: RetryPolicy | None,
        timeout: float,
        options: Mapping[str, Any] | None,
        clock: Clock | None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError(f"'model' must be a non-empty string (got {model!r})")
        from importlib.util import find_spec

        if find_spec(self.sdk_module) is None:
            raise ConfigurationError(
                f"the {self.provider} client needs the {self.sdk_module!r} package; "
                f"install the extra: pip install 'completion-harness[{self.extra}]'"
            )
        if api_key_env is not None:
            if not isinstance(api_key_env, str) or not api_key_env:
                raise ConfigurationError(
                    f"'api_key_env' must name an environment variable (got {api_key_env!r})"
                )
            if not os.environ.get(api_key_env):
                raise ConfigurationError(
                    f"the environment variable {api_key_env} (api_key_env) is not set; "
                    f"the {self.provider} client reads its API key from it"
                )
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ConfigurationError(f"'timeout' must be a number of seconds > 0 (got {timeout!r})")
        if price is not None and not isinstance(price, ModelPrice):
            raise ConfigurationError(f"'price' must be a ModelPrice (got {price!r})")
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.price = price if price is not None else (prices or PriceTable.default()).lookup(model)
        self.retry = retry if retry is not None else RetryPolicy()
        self.timeout = float(timeout)
        self.options: dict[str, Any] = dict(options or {})
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._clients = LoopClients(self._build)

    @property
    def prices_known(self) -> bool:
        """Whether calls report a cost (a cost budget requires it)."""
        return self.price is not None

    def bind_clock(self, clock: Clock) -> None:
        """Wait between retries and measure deadlines on the harness's clock."""
        self._clock = clock

    async def complete(self, request: ModelRequest) -> ModelResponse:
        sdk = self._import_sdk()
        key = self._api_key()
        client = await self._clients.get(key)

        async def attempt() -> ModelResponse:
            try:
                raw = await self._send(client, request)
            except sdk.APIError as exc:
                raise map_sdk_error(exc, sdk, self.provider, key) from None
            body = read_body(raw.http_response, key)
            if not body.is_json:
                raise not_json(self.provider, body)
            return self._parse(body.data)

        return await call_with_retry(
            attempt,
            policy=self.retry,
            clock=self._clock,
            deadline=request.deadline,
            what=f"{self.provider} {self.model}",
        )

    async def aclose(self) -> None:
        """Close the SDK client this event loop uses, and with it its open connections.

        A loop's SDK client is also closed when the loop ends, and not before even if this
        object is dropped: close a client made for one task inside a long-lived loop. The
        client stays usable; the next call opens a new SDK client.
        """
        await self._clients.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _import_sdk(self) -> ModuleType:
        return importlib.import_module(self.sdk_module)

    def _api_key(self) -> str:
        if self.api_key_env is None:
            return NO_KEY
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ModelError(
                f"the environment variable {self.api_key_env} holding the API key is not set",
                kind="auth",
            )
        return key

    def _build(self, key: str) -> Any:
        """A new SDK async client (one per event loop, see `LoopClients`)."""
        return self._make(self._import_sdk(), key)

    @abstractmethod
    def _make(self, sdk: ModuleType, key: str) -> Any:
        """The SDK's async client, with the SDK's retries off."""

    @abstractmethod
    async def _send(self, client: Any, request: ModelRequest) -> Any:
        """One HTTP attempt; returns the SDK's raw response (``with_raw_response``)."""

    @abstractmethod
    def _parse(self, body: Any) -> ModelResponse:
        """The response body as a `ModelResponse`, or a `malformed` `ModelError`."""

    def cost(
        self, *, fresh_input: int, output: int, cache_read: int, cache_write: int
    ) -> float | None:
        if self.price is None:
            return None
        return self.price.cost(
            fresh_input=fresh_input, output=output, cache_read=cache_read, cache_write=cache_write
        )

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"{type(self).__name__}({self.model!r}{where}, api_key_env={self.api_key_env!r})"
