"""`RecordingModelClient`: wraps any model client and writes every exchange as a fixture line.

A line holds the response (text, tool calls, usage, model, stop reason), the agent that asked,
the request's digest and, as ``delay``, the time the call took on the run's clock, in the
format `ScriptedModelClient` replays. A failed call is recorded as an ``error`` line after its
delay, and a call cut off by a deadline as a line whose ``delay`` is the time it ran, so the
replay, on the same clock, spends the same time in every call and is cut off at the same
point. Replaying the file with the same tools, checks and workspace reproduces the run's
events, and a run halted by its wall-time budget halts the same way.

Lines are written whole (never torn) and always as valid UTF-8 (lone surrogates escaped). A
recording that cannot be written (a full disk, a file-size limit) halts the run with
``ModelFailed("recording", ...)``: the user asked for a replayable recording, and spending on
a model whose answers can no longer be recorded would be the worse surprise. The file keeps
every whole line written before, the run keeps its transcript, and every later call fails the
same way without reaching the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from .._clock import Clock, SystemClock
from .._errors import ModelError
from .._fs._jsonl import LineFile
from .._limits import UsageLimit, UsageLimitError
from .._log import LibraryLogger
from .._messages import ModelRequest, ModelResponse
from .._model import ChecksConsumed, KnowsPrices, ModelClient, ReadsClock

if TYPE_CHECKING:
    from ._mcp_replay import ToolServerScript

_log = LibraryLogger("harness.recording")


class RecordingModelClient:
    """A model client that forwards to `inner` and appends each exchange to `path`.

    The file is created (emptied) when the client is made, a `ConfigurationError` if `path`
    is a folder or lies under a file; each line is written as soon as the call returns, so a
    crash loses nothing already answered. A line that cannot be written raises
    ``ModelError(kind="recording")`` (see the module's docstring).
    """

    def __init__(self, inner: ModelClient, path: str | Path, *, clock: Clock | None = None) -> None:
        self.inner = inner
        self._file = LineFile("recording", path)
        self.path = self._file.path
        self.lines = 0
        self._failed: str | None = None
        self._clock: Clock = clock if clock is not None else SystemClock()

    @property
    def prices_known(self) -> bool:
        return self.inner.prices_known if isinstance(self.inner, KnowsPrices) else True

    def bind_clock(self, clock: Clock) -> None:
        """Measure latency on the harness's clock, and hand the clock to the inner client."""
        self._clock = clock
        if isinstance(self.inner, ReadsClock):
            self.inner.bind_clock(clock)

    @property
    def tool_server_script(self) -> ToolServerScript | None:
        """The inner client's recorded MCP lines, when it replays a fixture that has them:
        the servers are then served from there (and recorded again here)."""
        from ._mcp_replay import ToolServerScript

        script = getattr(self.inner, "tool_server_script", None)
        return script if isinstance(script, ToolServerScript) else None

    def record_tool_server(self, line: Mapping[str, Any]) -> None:
        """Append an MCP line (a server's listing, or a call and its result). A line that
        cannot be written fails the recording: the next model call halts the run."""
        if self._failed is not None:
            return
        with suppress(ModelError):
            self._write(dict(line))

    def verify_consumed(self) -> None:
        """Pass the check on to the inner client (a scripted one verifies its script), unless
        the recording failed: then the recorder cut the run short, not the script."""
        if self._failed is not None:
            return
        if isinstance(self.inner, ChecksConsumed):
            self.inner.verify_consumed()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if self._failed is not None:
            raise ModelError(self._failed, kind="recording")
        head: dict[str, Any] = {"agent": request.agent, "request_digest": request.digest()}
        started = self._clock.now()
        try:
            response = await self.inner.complete(request)
        except ModelError as exc:
            error: dict[str, Any] = {"kind": exc.kind, "message": str(exc)}
            if isinstance(exc, UsageLimitError):  # what the replay needs to wait the same
                limit = exc.limit
                error.update(source=limit.source, message=limit.message)
                error.update({k: v for k, v in _reset(limit).items() if v is not None})
            if exc.retryable:
                error["retryable"] = True
            self._write({**head, **self._delay(started), "error": error}, also=exc)
            raise
        except anyio.get_cancelled_exc_class():
            ran = self._since(started)
            # A failure here is logged and kept for later calls; the cancellation goes on.
            with suppress(ModelError):
                self._write(
                    {
                        **head,
                        "comment": f"cancelled after {ran:g}s (a deadline or the caller)",
                        "delay": ran,
                        "error": {
                            "kind": "timeout",
                            "message": f"the call was cancelled after {ran}s",
                        },
                    }
                )
            raise
        self._write({**head, **response_line(response), **self._delay(started)})
        return response

    def _since(self, started: float) -> float:
        # Not rounded: a replay on the same clock must reach the same deadline exactly.
        return max(self._clock.now() - started, 0.0)

    def _delay(self, started: float) -> dict[str, float]:
        """The call's latency as the line's ``delay``, which the replay sleeps (none if 0)."""
        ran = self._since(started)
        return {"delay": ran} if ran > 0 else {}

    def _write(self, line: dict[str, Any], *, also: ModelError | None = None) -> None:
        """Append `line`, or fail for good with ``ModelError("recording")`` (the call's own
        error, `also`, is named in its message)."""
        try:
            self._file.write(line)
        except (OSError, ValueError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            message = f"cannot write the recording {str(self.path)!r}: {detail}"
            if also is not None:
                message += f" (the model call had failed too: {also})"
            self._failed = message
            self._file.close()
            _log.warning("recording.failed", path=str(self.path), lines=self.lines, error=detail)
            raise ModelError(message, kind="recording") from exc
        self.lines += 1

    def __repr__(self) -> str:
        return f"RecordingModelClient({self.inner!r}, {str(self.path)!r}, lines={self.lines})"


def response_line(response: ModelResponse) -> dict[str, Any]:
    """The fixture fields of a response (the keys `ScriptedModelClient` reads back)."""
    line: dict[str, Any] = {"text": response.text}
    if response.tool_calls:
        line["tool_calls"] = [c.to_dict() for c in response.tool_calls]
    line["usage"] = response.usage.to_dict()
    if response.model is not None:
        line["model"] = response.model
    if response.stop_reason is not None:
        line["stop_reason"] = response.stop_reason
    return line


def _reset(limit: UsageLimit) -> dict[str, float | None]:
    return {"retry_in": limit.retry_in, "resets_at": limit.resets_at}
