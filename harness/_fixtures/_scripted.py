"""`ScriptedModelClient`: replays model responses from a JSONL fixture, failing closed.

One line answers one model call (see ``fixtures/README.md``). Running out of lines, a line
left unused when the run ends, a request that breaks a line's ``expect`` block, and a
malformed line are all `FixtureError`s that name the file and the line (and the field).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import frozen

from .._clock import Clock
from .._errors import (
    FixtureAssertionError,
    FixtureError,
    FixtureExhausted,
    FixtureUnconsumed,
    ModelError,
)
from .._events._base import Event
from .._events._run import RunHalted, ToolServerStarted, TurnFinished, TurnStarted
from .._events._tool import ToolCalled
from .._fs._jsonl import dump_line, json_rows, read_lines
from .._halt import ModelFailed, UsageLimitReached
from .._limits import USAGE_LIMIT, UsageLimit, UsageLimitError
from .._messages import ModelRequest, ModelResponse, ToolCall
from .._tools._base import ToolResult
from .._usage import Usage
from ._mcp_keys import CALL_KEY, SERVER_KEY

if TYPE_CHECKING:
    from ._mcp_replay import RecordedTool, ToolServerScript

_LINE_KEYS = frozenset(
    {
        "text",
        "tool_calls",
        "usage",
        "model",
        "stop_reason",
        "delay",
        "expect",
        "error",
        "agent",
        "comment",
        "request_digest",
        "latency",
        "attempt",
    }
)
_USAGE_KEYS = frozenset({"input_tokens", "output_tokens", "cached_tokens", "cost_usd"})
_EXPECT_KEYS = frozenset(
    {
        "last_message_contains",
        "any_message_contains",
        "system_contains",
        "not_contains",
        "last_role",
        "last_feedback_source",
        "message_count",
        "tools",
        "turn",
        "agent",
    }
)
_ERROR_KINDS = frozenset(
    {
        "auth",
        "bad_request",
        "rate_limit",
        "server",
        "timeout",
        "connection",
        "malformed",
        "recording",
        "other",
        USAGE_LIMIT,
    }
)


@frozen
class ScriptLine:
    """One parsed fixture line: the response to give (or the error to raise) and its checks."""

    path: str
    line: int
    response: ModelResponse | None
    error: ModelError | None
    delay: float
    expect: Mapping[str, Any]
    agent: str | None
    attempt: int | None = None
    """The best-of attempt this line answers (None: the run's own model)."""


class ScriptedModelClient:
    """A model client that answers from a script, in order, and fails closed.

    A best-of run gives each attempt the lines whose ``attempt`` is its number
    (`for_attempt`); a fixture without such lines gives every attempt the whole script.
    """

    def __init__(
        self,
        lines: Sequence[ScriptLine],
        *,
        clock: Clock | None = None,
        name: str = "",
        tool_servers: ToolServerScript | None = None,
    ) -> None:
        self._lines = list(lines)
        self._tool_servers = tool_servers
        self._next = 0
        self._clock = clock
        self.name = name
        self.requests: list[ModelRequest] = []
        self._forked = False

    @classmethod
    def from_jsonl(cls, path: str | Path, *, clock: Clock | None = None) -> ScriptedModelClient:
        """Load a fixture file; every malformed line is reported with its number and field."""
        file = Path(path)
        lines = read_lines(file, what="fixture")
        script, servers = parse_fixture(lines, str(file))
        return cls(script, clock=clock, name=str(file), tool_servers=servers)

    @classmethod
    def from_responses(
        cls,
        rows: Iterable[Mapping[str, Any]],
        *,
        clock: Clock | None = None,
        name: str = "<script>",
    ) -> ScriptedModelClient:
        """Build a script from already-parsed line objects (handy in tests)."""
        lines = [json.dumps(dict(row)) for row in rows]
        script, servers = parse_fixture(lines, name)
        return cls(script, clock=clock, name=name, tool_servers=servers)

    @property
    def tool_server_script(self) -> ToolServerScript | None:
        """The fixture's MCP lines (see ``docs/mcp.md``), which a replay serves instead of
        starting the servers; None when it has none."""
        return self._tool_servers

    @property
    def prices_known(self) -> bool:
        """True when every scripted response states its cost."""
        return all(
            line.response is None or line.response.usage.cost_usd is not None
            for line in self._lines
        )

    @property
    def remaining(self) -> int:
        return len(self._lines) - self._next

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if self._next >= len(self._lines):
            last = self._lines[-1].line if self._lines else 0
            raise FixtureExhausted(
                f"the model was called for turn {request.turn} of agent {request.agent!r} but "
                f"the script has no more lines (all {len(self._lines)} used; last was line {last})",
                path=self.name,
            )
        line = self._lines[self._next]
        self._next += 1
        self.requests.append(request)
        _check_expectations(line, request)
        if line.delay > 0:
            if self._clock is None:
                import anyio

                await anyio.sleep(line.delay)
            else:
                await self._clock.sleep(line.delay)
        if line.error is not None:
            raise line.error
        assert line.response is not None
        return line.response

    def for_attempt(self, attempt: int) -> ScriptedModelClient:
        """A client over the lines for best-of attempt `attempt` (every line, when the
        script names no attempt); each such client checks its own lines are used."""
        tagged = [line for line in self._lines if line.attempt is not None]
        if tagged:
            untagged = next((line for line in self._lines if line.attempt is None), None)
            if untagged is not None:
                raise FixtureError(
                    "a fixture with 'attempt' lines must give every line an attempt",
                    path=untagged.path,
                    line=untagged.line,
                    field="attempt",
                )
            mine = [line for line in tagged if line.attempt == attempt]
            if not mine:
                raise FixtureError(
                    f"best-of attempt {attempt} has no lines: the fixture gives lines to "
                    f"attempts {sorted({line.attempt or 0 for line in tagged})}",
                    path=self.name,
                )
        else:
            mine = list(self._lines)
        self._forked = True
        return ScriptedModelClient(
            mine, clock=self._clock, name=self.name, tool_servers=self._tool_servers
        )

    def verify_consumed(self) -> None:
        """Raise `FixtureUnconsumed` naming the first line no call used (or the first
        recorded MCP call no tool call used). Once forked for attempts, each attempt's
        client checks its own lines instead."""
        if self._forked:
            return
        if self._tool_servers is not None and self._next >= len(self._lines):
            self._tool_servers.verify_consumed()
        if self._next < len(self._lines):
            line = self._lines[self._next]
            raise FixtureUnconsumed(
                f"the run ended with {self.remaining} script line(s) unused, starting here",
                path=line.path,
                line=line.line,
            )

    def bind_clock(self, clock: Clock) -> None:
        """Use `clock` for `delay` (the harness's clock, so delays replay exactly)."""
        self._clock = clock

    def __repr__(self) -> str:
        return f"ScriptedModelClient({self.name!r}, used={self._next}, lines={len(self._lines)})"


def parse_script(lines: Iterable[str], path: str) -> list[ScriptLine]:
    """Parse fixture lines; blank lines and lines starting with ``#`` are skipped."""
    return parse_fixture(lines, path)[0]


def parse_fixture(
    lines: Iterable[str], path: str
) -> tuple[list[ScriptLine], ToolServerScript | None]:
    """The model's lines of a fixture, and its MCP lines (None when it has none)."""
    script: list[ScriptLine] = []
    servers: ToolServerScript | None = None
    for n, row in json_rows(lines, path, comments=True):
        if isinstance(row, dict) and (SERVER_KEY in row or CALL_KEY in row):
            if servers is None:
                from ._mcp_replay import ToolServerScript  # with the first MCP line

                servers = ToolServerScript(path)
            servers.add(row, n)
        else:
            script.append(_parse_line(row, path, n))
    return script, servers


def _parse_line(row: object, path: str, lineno: int) -> ScriptLine:
    def fail(field: str, message: str) -> FixtureError:
        return FixtureError(message, path=path, line=lineno, field=field)

    if not isinstance(row, dict):
        raise FixtureError(
            f"a line must be a JSON object (got {type(row).__name__})", path=path, line=lineno
        )
    unknown = sorted(set(row) - _LINE_KEYS)
    if unknown:
        raise fail(unknown[0], f"unknown key{_did_you_mean(unknown[0], _LINE_KEYS)}")
    text = row.get("text", "")
    if not isinstance(text, str):
        raise fail("text", f"must be a string (got {type(text).__name__})")
    calls = _parse_calls(row.get("tool_calls", []), lineno, fail)
    usage = _parse_usage(row.get("usage", {}), fail)
    attempt = row.get("attempt")
    if attempt is not None and (
        isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1
    ):
        raise fail("attempt", f"must be an attempt number >= 1 (got {attempt!r})")
    for key in ("model", "stop_reason", "agent"):
        if key in row and not isinstance(row[key], str):
            raise fail(key, f"must be a string (got {type(row[key]).__name__})")
    # Recordings made before `delay` held every call's latency wrote it as `latency` only.
    delay_key = "latency" if "latency" in row and "delay" not in row else "delay"
    delay = row.get(delay_key, 0)
    if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
        raise fail(delay_key, f"must be a number of seconds >= 0 (got {delay!r})")
    expect = row.get("expect", {})
    if not isinstance(expect, dict):
        raise fail("expect", f"must be an object (got {type(expect).__name__})")
    bad = sorted(set(expect) - _EXPECT_KEYS)
    if bad:
        raise fail(f"expect.{bad[0]}", f"unknown expectation{_did_you_mean(bad[0], _EXPECT_KEYS)}")
    error: ModelError | None = None
    if "error" in row:
        spec = row["error"]
        if not isinstance(spec, dict) or not isinstance(spec.get("message"), str):
            raise fail("error", "must be an object with a string 'message'")
        kind = spec.get("kind", "other")
        if kind not in _ERROR_KINDS:
            raise fail("error.kind", f"must be one of {sorted(_ERROR_KINDS)} (got {kind!r})")
        if kind == USAGE_LIMIT:
            error = UsageLimitError(_parse_limit(spec, fail))
        else:
            retryable = bool(spec.get("retryable", False))
            error = ModelError(spec["message"], kind=kind, retryable=retryable)
    response = None
    if error is None:
        response = ModelResponse(
            text=text,
            tool_calls=calls,
            usage=usage,
            model=row.get("model"),
            stop_reason=row.get("stop_reason"),
        )
    return ScriptLine(
        path, lineno, response, error, float(delay), expect, row.get("agent"), attempt
    )


def _did_you_mean(key: str, valid: frozenset[str] | tuple[str, ...]) -> str:
    """What follows "unknown key": the closest valid key when one is close, and the valid
    keys: ``; did you mean 'delay'? (expected some of [...])``."""
    import difflib  # only a broken fixture reaches here

    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    guess = f"; did you mean {close[0]!r}?" if close else ""
    return f"{guess} (expected some of {sorted(valid)})"


def _parse_limit(spec: Mapping[str, Any], fail: Any) -> UsageLimit:
    """A ``usage_limit`` error line: ``{"kind": "usage_limit", "message": ..., "source": ...,
    "retry_in": seconds or null, "resets_at": Unix time or null, "terminal": a quota that is
    gone, not a window (default false)}``."""
    source = spec.get("source", "fixture")
    if not isinstance(source, str):
        raise fail("error.source", f"must be a string (got {type(source).__name__})")
    numbers: dict[str, float | None] = {}
    for key in ("retry_in", "resets_at"):
        value = spec.get(key)
        if value is not None and not _amount(value):
            raise fail(f"error.{key}", f"must be a finite number >= 0 or null (got {value!r})")
        numbers[key] = None if value is None else float(value)
    terminal = spec.get("terminal", False)
    if not isinstance(terminal, bool):
        raise fail("error.terminal", f"must be true or false (got {terminal!r})")
    return UsageLimit(
        source, spec["message"], numbers["retry_in"], numbers["resets_at"], terminal=terminal
    )


def _parse_calls(value: object, lineno: int, fail: Any) -> tuple[ToolCall, ...]:
    if not isinstance(value, list):
        raise fail("tool_calls", f"must be a list (got {type(value).__name__})")
    calls = []
    for i, item in enumerate(value):
        where = f"tool_calls[{i}]"
        if not isinstance(item, dict):
            raise fail(where, "must be an object with 'name' and 'arguments'")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise fail(f"{where}.name", f"must be a non-empty string (got {name!r})")
        arguments = item.get("arguments", {})
        if not isinstance(arguments, dict):
            raise fail(f"{where}.arguments", f"must be an object (got {type(arguments).__name__})")
        call_id = item.get("id", f"call_{lineno}_{i}")
        if not isinstance(call_id, str):
            raise fail(f"{where}.id", f"must be a string (got {call_id!r})")
        extra = sorted(set(item) - {"id", "name", "arguments"})
        if extra:
            known = ("id", "name", "arguments")
            raise fail(f"{where}.{extra[0]}", f"unknown key{_did_you_mean(extra[0], known)}")
        calls.append(ToolCall(call_id, name, arguments))
    return tuple(calls)


def _amount(value: object) -> bool:
    """Whether `value` is a finite number >= 0 (NaN and infinity are not: JSON has neither,
    though Python's reader takes them)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value >= 0


def _parse_usage(value: object, fail: Any) -> Usage:
    if not isinstance(value, dict):
        raise fail("usage", f"must be an object (got {type(value).__name__})")
    bad = sorted(set(value) - _USAGE_KEYS)
    if bad:
        raise fail(f"usage.{bad[0]}", f"unknown key{_did_you_mean(bad[0], _USAGE_KEYS)}")
    counts = {}
    for key in ("input_tokens", "output_tokens", "cached_tokens"):
        n = value.get(key, 0)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise fail(f"usage.{key}", f"must be an integer >= 0 (got {n!r})")
        counts[key] = n
    cost = value.get("cost_usd")
    if cost is not None and not _amount(cost):
        raise fail("usage.cost_usd", f"must be a finite number >= 0 or null (got {cost!r})")
    return Usage(
        counts["input_tokens"],
        counts["output_tokens"],
        counts["cached_tokens"],
        None if cost is None else float(cost),
    )


def _as_list(value: object) -> list[str]:
    return (
        [value]
        if isinstance(value, str)
        else [str(v) for v in value]
        if isinstance(value, list)
        else [str(value)]
    )


def _check_expectations(line: ScriptLine, request: ModelRequest) -> None:
    def fail(key: str, message: str) -> FixtureAssertionError:
        return FixtureAssertionError(message, path=line.path, line=line.line, field=f"expect.{key}")

    if line.agent is not None and line.agent != request.agent:
        raise FixtureAssertionError(
            f"this line answers agent {line.agent!r} but agent {request.agent!r} asked",
            path=line.path,
            line=line.line,
            field="agent",
        )
    messages = request.messages
    expect = line.expect
    if not expect:
        return
    last = messages[-1] if len(messages) else None
    for key, value in expect.items():
        if key == "last_message_contains":
            content = last.content if last is not None else ""
            for needle in _as_list(value):
                if needle not in content:
                    raise fail(
                        key,
                        f"the last message does not contain {needle!r}; it is: {content[-300:]!r}",
                    )
        elif key == "any_message_contains":
            for needle in _as_list(value):
                if not any(needle in m.content for m in messages):
                    raise fail(key, f"no message contains {needle!r}")
        elif key == "system_contains":
            system = request.system
            for needle in _as_list(value):
                if needle not in system:
                    raise fail(key, f"the system prompt does not contain {needle!r}")
        elif key == "not_contains":
            for needle in _as_list(value):
                if any(needle in m.content for m in messages):
                    raise fail(key, f"a message contains {needle!r}, which it must not")
        elif key == "last_role":
            role = last.role if last is not None else None
            if role != value:
                raise fail(key, f"the last message's role is {role!r}, expected {value!r}")
        elif key == "last_feedback_source":
            source = next((m.feedback_source for m in reversed(messages) if m.is_feedback), None)
            if source != value:
                raise fail(key, f"the latest feedback came from {source!r}, expected {value!r}")
        elif key == "message_count":
            if len(messages) != value:
                raise fail(key, f"the request has {len(messages)} messages, expected {value}")
        elif key == "tools":
            offered = sorted(t.name for t in request.tools)
            if offered != sorted(_as_list(value)):
                raise fail(
                    key, f"the tools offered are {offered}, expected {sorted(_as_list(value))}"
                )
        elif key == "turn":
            if request.turn != value:
                raise fail(key, f"this is turn {request.turn} of the session, expected {value}")
        elif key == "agent" and request.agent != value:
            raise fail(key, f"the request is from agent {request.agent!r}, expected {value!r}")


def fixture_from_transcript(path: str | Path, *, agent: str | None = None) -> list[dict[str, Any]]:
    """Turn a JSONL transcript into fixture lines, one per model call (of `agent`, if given).

    A call's time on the run's clock becomes the line's ``delay``. A call that never returned
    becomes an ``error`` line: the provider's error if that is what halted the run, otherwise
    a line cut off after the time the call ran (a deadline stopped it), so the replay is cut
    off at the same point. Replaying the lines with the same tools, checks, workspace and a
    `FakeClock` reproduces the run's events, their times included. The run's MCP servers
    and calls become MCP lines (``docs/mcp.md``), so the replay needs none of its servers.
    The transcript is read one event at a time: only the fixture lines are kept.
    """
    from .._events._reader import TranscriptReader
    from ._mcp_replay import call_line, server_line

    lines: list[dict[str, Any]] = []
    pending: TurnStarted | None = None  # a turn whose call has not returned yet
    mcp_tools: dict[str, tuple[str, str]] = {}  # as the model calls it -> (server, tool)
    for _, event in TranscriptReader(path):
        if isinstance(event, ToolServerStarted):
            listed = _recorded_tools(event)
            mcp_tools.update({t.name: (event.server, t.tool) for t in listed})
            lines.append(server_line(event.server, listed))
        elif isinstance(event, ToolCalled) and event.call.name in mcp_tools:
            server, remote = mcp_tools[event.call.name]
            result = ToolResult(event.content, event.is_error)
            lines.append(call_line(server, remote, event.agent, event.call, result))
        if pending is not None:
            # Nothing else happens in a run while a model call is in flight: the next event
            # either is the call's turn.finished or comes after the call was stopped.
            latency = event.at - pending.at
            if isinstance(event, TurnFinished):
                line = _line_from_response(event.response)
                if latency > 0:
                    line["delay"] = latency
            else:
                line = _line_cut_off(latency, event)
            line["agent"] = pending.agent
            lines.append(line)
            pending = None
        if isinstance(event, TurnStarted) and (agent is None or event.agent == agent):
            pending = event
    return lines


def _recorded_tools(event: ToolServerStarted) -> tuple[RecordedTool, ...]:
    from ._mcp_replay import RecordedTool

    return tuple(
        RecordedTool(
            str(t.get("name", "")),
            str(t.get("tool", "")),
            str(t.get("description", "")),
            dict(t.get("input_schema") or {}),
            bool(t.get("read_only", False)),
        )
        for t in event.tools
    )


def _line_from_response(response: ModelResponse) -> dict[str, Any]:
    data = response.to_dict()
    line: dict[str, Any] = {"text": data["text"]}
    for key in ("tool_calls", "usage", "model", "stop_reason"):
        if key in data:
            line[key] = data[key]
    return line


def _line_cut_off(latency: float, next_event: Event) -> dict[str, Any]:
    from .._events._pause import RunPaused  # loaded with the transcript being read

    if isinstance(next_event, RunPaused):  # the call met a usage limit; the run waited
        limit = UsageLimit(
            next_event.source, next_event.message, next_event.retry_in, next_event.resets_at
        )
        return {"delay": latency, "error": _limit_error(limit)}
    if isinstance(next_event, RunHalted) and isinstance(next_event.reason, UsageLimitReached):
        reason = next_event.reason
        terminal = reason.cause == "terminal"
        limit = UsageLimit(reason.source, reason.message, reason.retry_in, terminal=terminal)
        return {"delay": latency, "error": _limit_error(limit)}
    if isinstance(next_event, RunHalted) and isinstance(next_event.reason, ModelFailed):
        kind = next_event.reason.kind
        return {
            "delay": latency,
            "error": {
                "kind": kind if kind in _ERROR_KINDS else "other",
                "message": next_event.reason.message,
            },
        }
    return {
        "comment": f"cut off after {latency:g}s: the call never returned",
        "delay": latency,
        "error": {"kind": "timeout", "message": f"the call was cut off after {latency:g}s"},
    }


def _limit_error(limit: UsageLimit) -> dict[str, Any]:
    error: dict[str, Any] = {"kind": USAGE_LIMIT, "message": limit.message, "source": limit.source}
    if limit.retry_in is not None:
        error["retry_in"] = limit.retry_in
    if limit.resets_at is not None:
        error["resets_at"] = limit.resets_at
    if limit.terminal:
        error["terminal"] = True
    return error


def write_fixture(lines: Iterable[Mapping[str, Any]], path: str | Path) -> Path:
    """Write fixture lines as JSONL."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as handle:
        for line in lines:
            handle.write(dump_line(dict(line)))
    return target
