"""What a provider sends back, on its way in: redacted, decoded, and errors typed.

Every body a provider answers with, a reply or an error, is read by `read_body`, which removes
the API key from it before anything else sees it; so the key cannot reach a response's text
or tool calls, an error message, the halt reason, the transcript, the logs or a fixture. The
SDK's exceptions are turned into `ModelError`s by `map_sdk_error`, whose message is built from
that redacted body (the provider's own error message, once), not from the SDK's text.
"""

from __future__ import annotations

import json
import re
from types import ModuleType
from typing import Any

from attrs import frozen

from .._errors import ModelError
from ._retry import wait_seconds

REDACTED = "[redacted]"
# Local OpenAI-compatible servers (vLLM, Ollama, llama.cpp) need no key, but the SDK insists
# on one; this is the value their documentation uses. It is never a real credential.
NO_KEY = "EMPTY"
# How much of a provider's error text a message keeps: llama.cpp, for one, echoes the whole
# conversation in its errors.
MAX_DETAIL = 1000
MAX_SNIPPET = 200

# Servers that answer 500 to a request they could not parse (llama.cpp does, with type
# "server_error"; llama-cpp-python does with its request model's pydantic report, type
# "internal_server_error"): sending it again gives the same answer, so it is a bad request.
_INVALID_TYPES = frozenset(
    {"invalid_request_error", "invalid_request", "BadRequestError", "bad_request"}
)
_INVALID_MESSAGE = re.compile(
    r"^\[json\.exception\."  # llama.cpp: nlohmann::json refusing a field of the request
    r"|^Failed to parse (?:messages|tools|tool call arguments)"  # llama.cpp: its request parser
    r"|^(?:Invalid|Expected) '\w+'"  # llama.cpp: "Invalid 'content' type", "Expected 'content'"
    # llama-cpp-python: pydantic's "2 validation errors for CreateChatCompletionRequest", or
    # FastAPI's "1 validation error:" around it
    r"|^\d+ validation errors?(?: for \w+|:)",
)


def redact(text: str, secret: str | None) -> str:
    """`text` with every occurrence of `secret` replaced by ``[redacted]``."""
    if secret and secret != NO_KEY and secret in text:
        return text.replace(secret, REDACTED)
    return text


def _redact_decoded(value: Any, secret: str) -> Any:
    """Redact inside decoded JSON (for a key the raw text spelled with escapes)."""
    if isinstance(value, str):
        return redact(value, secret)
    if isinstance(value, list):
        return [_redact_decoded(v, secret) for v in value]
    if isinstance(value, dict):
        return {redact(k, secret): _redact_decoded(v, secret) for k, v in value.items()}
    return value


_NOT_JSON = object()


@frozen
class Body:
    """A response body with the key removed: its text, and its JSON (or `_NOT_JSON`)."""

    text: str
    data: Any

    @property
    def is_json(self) -> bool:
        return self.data is not _NOT_JSON


def read_body(response: Any, secret: str | None) -> Body:
    """The redacted body of an httpx response: the one door provider text comes in by."""
    try:
        raw = response.text
    except Exception:  # a streamed body that was closed unread
        raw = ""
    text = redact(raw, secret)
    try:
        data = json.loads(text)
    except ValueError:
        return Body(text, _NOT_JSON)
    if secret and secret != NO_KEY and "\\" in text:
        data = _redact_decoded(data, secret)
    return Body(text, data)


def shorten(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def malformed(provider: str, what: str) -> ModelError:
    return ModelError(f"{provider} answered with a malformed response: {what}", kind="malformed")


def not_json(provider: str, body: Body) -> ModelError:
    return ModelError(
        f"{provider} answered with a body that is not JSON: {shorten(body.text, MAX_SNIPPET)!r}",
        kind="malformed",
    )


def _error_fields(body: Body) -> tuple[str, str | None]:
    """The error's message (the provider's own, or the whole body) and its type, if any."""
    data = body.data
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, str) and error.strip():
        return error, None
    if isinstance(error, dict):
        message = error.get("message")
        kind = error.get("type", error.get("code"))
        kind = kind if isinstance(kind, str) else None
        if isinstance(message, str) and message.strip():
            return message, kind
        return body.text, kind
    return body.text, None


def map_sdk_error(exc: Exception, sdk: ModuleType, provider: str, secret: str) -> ModelError:
    """Translate an OpenAI or Anthropic SDK exception into a typed, redacted `ModelError`."""
    if isinstance(exc, sdk.APITimeoutError):
        return ModelError(f"{provider}: the request timed out", kind="timeout", retryable=True)
    message = redact(str(getattr(exc, "message", None) or exc), secret)
    if isinstance(exc, sdk.APIConnectionError):
        return ModelError(f"{provider}: {message}", kind="connection", retryable=True)
    if isinstance(exc, sdk.APIResponseValidationError):
        return ModelError(f"{provider}: {message}", kind="malformed")
    if not isinstance(exc, sdk.APIStatusError):
        return ModelError(f"{provider}: {message}", kind="other")
    status = int(exc.status_code)
    detail, error_type = _error_fields(read_body(exc.response, secret))
    kind, retryable = _classify(status)
    if retryable and status >= 500 and _says_invalid(detail, error_type):
        kind, retryable = "bad_request", False
    return ModelError(
        f"{provider} HTTP {status}: {shorten(detail, MAX_DETAIL) or '(empty body)'}",
        kind=kind,
        retryable=retryable,
        status_code=status,
        retry_after=wait_seconds(dict(exc.response.headers)),
    )


def _says_invalid(detail: str, error_type: str | None) -> bool:
    return error_type in _INVALID_TYPES or _INVALID_MESSAGE.search(detail.strip()) is not None


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
