"""What the OpenAI and Anthropic clients share: keys from the environment, prices, retries,
and turning SDK exceptions into typed `ModelError`s.

API keys are read from an environment variable at each call and handed straight to the SDK;
no client stores, prints or logs one, and any provider message that echoes it is redacted.
The SDK's own retries are off (``max_retries=0``): `call_with_retry` does the retrying, on the
harness's clock and within the request's deadline.
"""

from __future__ import annotations

import importlib
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from types import ModuleType
from typing import Any

from .._clock import Clock, SystemClock
from .._errors import ConfigurationError, ModelError
from .._messages import ModelRequest, ModelResponse
from ._pricing import ModelPrice, PriceTable
from ._retry import RetryPolicy, call_with_retry, retry_after_seconds

REDACTED = "[redacted]"
# Local OpenAI-compatible servers (vLLM, Ollama, llama.cpp) need no key, but the SDK insists
# on one; this is the value their documentation uses. It is never a real credential.
NO_KEY = "EMPTY"


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
        async with self._open(sdk, key) as client:

            async def attempt() -> ModelResponse:
                try:
                    body = await self._send(client, request)
                except sdk.APIError as exc:
                    raise map_sdk_error(exc, sdk, self.provider, key) from None
                return self._parse(body)

            return await call_with_retry(
                attempt,
                policy=self.retry,
                clock=self._clock,
                deadline=request.deadline,
                what=f"{self.provider} {self.model}",
            )

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

    @abstractmethod
    def _open(self, sdk: ModuleType, key: str) -> AbstractAsyncContextManager[Any]:
        """The SDK's async client for one `complete` call (closed after it)."""

    @abstractmethod
    async def _send(self, client: Any, request: ModelRequest) -> Any:
        """One HTTP attempt; returns the decoded JSON body."""

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


def read_json(raw: Any, provider: str) -> Any:
    """The JSON body of a raw SDK response; anything else is a `malformed` error."""
    text = raw.http_response.text
    try:
        return json.loads(text)
    except ValueError:
        snippet = text[:200]
        raise ModelError(
            f"{provider} answered with a body that is not JSON: {snippet!r}", kind="malformed"
        ) from None


def malformed(provider: str, what: str) -> ModelError:
    return ModelError(f"{provider} answered with a malformed response: {what}", kind="malformed")


def redact(text: str, secret: str | None) -> str:
    if secret and secret != NO_KEY and secret in text:
        return text.replace(secret, REDACTED)
    return text


def map_sdk_error(exc: Exception, sdk: ModuleType, provider: str, secret: str) -> ModelError:
    """Translate an OpenAI or Anthropic SDK exception into a typed, redacted `ModelError`."""
    message = redact(str(getattr(exc, "message", None) or exc), secret)
    if isinstance(exc, sdk.APITimeoutError):
        return ModelError(f"{provider}: the request timed out", kind="timeout", retryable=True)
    if isinstance(exc, sdk.APIConnectionError):
        return ModelError(f"{provider}: {message}", kind="connection", retryable=True)
    if isinstance(exc, sdk.APIResponseValidationError):
        return ModelError(f"{provider}: {message}", kind="malformed")
    if not isinstance(exc, sdk.APIStatusError):
        return ModelError(f"{provider}: {message}", kind="other")
    status = int(exc.status_code)
    retry_after = retry_after_seconds(dict(exc.response.headers))
    kind, retryable = _classify(status)
    return ModelError(
        f"{provider} HTTP {status}: {message}",
        kind=kind,
        retryable=retryable,
        status_code=status,
        retry_after=retry_after,
    )


def _classify(status: int) -> tuple[str, bool]:
    if status in (401, 403):
        return "auth", False
    if status == 429:
        return "rate_limit", True
    if status == 408:
        return "timeout", True
    if status == 409:
        return "other", True
    if status >= 500:
        return "server", True
    if status in (400, 404, 413, 422):
        return "bad_request", False
    return "other", False
