"""Notifications: a webhook or a command told when a run or a board ends, an account pauses or
resumes, or a task needs review.

A `Notifier` is an event sink (for a `Harness` and for a board alike) that picks the events it
is subscribed to by name and hands them to one background thread of its own, so a notifier that
fails, is slow or hangs never holds up or ends the run. Each delivery is bounded by `timeout`
seconds; a failed delivery is logged once per notifier as a ``notify.failed`` WARNING (the
count of failures is in `Notifier.statistics()`) and never raised. At most `MAX_PENDING`
notifications wait; more are dropped and counted. At process exit, notifications still waiting
get at most `EXIT_FLUSH` seconds in all.

What is sent, to a webhook as a JSON ``POST`` body and to a command as JSON on its stdin: the
event as its transcript line (``{"event": "run.halted", "at": ..., "reason": {...},
"verified": true, ...}``; a board's events carry ``kind``, ``message``, ``task``...) plus
``"text"``, one line a chat webhook can show.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
import urllib.parse
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol

from attrs import define, field, frozen

from .._errors import ConfigurationError
from .._events._base import Event
from .._log import get_logger
from .._schema import Key, Schema
from .._validate import check_positive

# The event names a notifier can subscribe to: defined here once. The pause events are emitted
# by the usage-limit pauses (a run's and a board account's); the board's by the board.
RUN_HALTED = "run.halted"
RUN_PAUSED = "run.paused"
RUN_RESUMED = "run.resumed"
BOARD_FINISHED = "board.finished"
TASK_REVIEW = "task.review"
TASK_FAILED = "task.failed"
ACCOUNT_PAUSED = "account.paused"
ACCOUNT_RESUMED = "account.resumed"

NOTIFY_EVENTS: tuple[str, ...] = (
    RUN_HALTED,
    RUN_PAUSED,
    RUN_RESUMED,
    BOARD_FINISHED,
    TASK_REVIEW,
    TASK_FAILED,
    ACCOUNT_PAUSED,
    ACCOUNT_RESUMED,
)
"""Every event name `Notifier(on=...)` accepts."""

DEFAULT_EVENTS: tuple[str, ...] = (
    RUN_HALTED,
    BOARD_FINISHED,
    TASK_REVIEW,
    ACCOUNT_PAUSED,
    ACCOUNT_RESUMED,
)
"""What a notifier is told by default: a run or a board ended, a task needs review, an account
paused or resumed."""

DEFAULT_TIMEOUT = 5.0
"""Seconds one delivery may take (a webhook's connection and each read; a command's run)."""
EXIT_FLUSH = 2.0
"""Seconds, in all, that notifications still waiting get at process exit."""
MAX_PENDING = 100

_log = get_logger("harness.notify")


class _Notable(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def _event_name(event: object) -> str | None:
    if isinstance(event, Event):
        return event.name
    kind = getattr(event, "kind", None)  # a board's event
    return kind if isinstance(kind, str) else None


def notification_body(event: _Notable, name: str) -> dict[str, Any]:
    """The JSON object sent for `event` (see the module's docstring)."""
    body = event.to_dict()
    body["event"] = name
    body["text"] = _summary(name, body)
    return body


def _summary(name: str, body: Mapping[str, Any]) -> str:
    if name == RUN_HALTED:
        reason = body.get("reason")
        kind = reason.get("type", "?") if isinstance(reason, Mapping) else reason
        verified = "verified" if body.get("verified") else "not verified"
        return f"run halted: {kind} ({verified})"
    message = body.get("message")
    task = body.get("task")
    parts = [name]
    if task:
        parts.append(f"task {task}")
    if message:
        parts.append(str(message))
    return ": ".join(parts)


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _names(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


@frozen
class Webhook:
    """POST the body as JSON to `url`, with `headers`; any answer but 2xx is a failure."""

    url: str = field(repr=False)  # a chat webhook's URL is itself a secret
    headers: Mapping[str, str] = field(factory=dict, repr=False)

    def __attrs_post_init__(self) -> None:
        # Loaded where a webhook is configured, in this thread, not on every start-up (nor
        # in the notifier's thread, perhaps while the interpreter exits).
        import urllib.request  # noqa: F401

    def deliver(self, body: bytes, timeout: float) -> None:
        import urllib.error
        import urllib.request

        headers = {"Content-Type": "application/json", **self.headers}
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                response.read(65536)
        except urllib.error.HTTPError as exc:
            exc.close()  # it holds the answer's socket
            raise RuntimeError(f"HTTP {exc.code} {exc.reason}") from None

    def __str__(self) -> str:
        # Neither the path nor the headers: a chat webhook's path and a header hold tokens.
        parts = urllib.parse.urlsplit(self.url)
        port = f":{parts.port}" if parts.port else ""
        return f"webhook {parts.scheme}://{parts.hostname}{port}"


@frozen
class Command:
    """Run `argv` with the body as JSON on its stdin; a non-zero exit is a failure. A command
    that outlives the timeout is killed with its process group."""

    argv: tuple[str, ...] = field(converter=_strings)

    def deliver(self, body: bytes, timeout: float) -> None:
        process = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        _RUNNING.add(process)
        try:
            _, stderr = process.communicate(body, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise TimeoutError(f"{self.argv[0]} ran over {timeout:g}s and was killed") from None
        finally:
            _RUNNING.discard(process)
        if process.returncode != 0:
            tail = stderr.decode("utf-8", "replace").strip()[-300:]
            raise RuntimeError(f"{self.argv[0]} exited with {process.returncode}: {tail!r}")

    def __str__(self) -> str:
        return f"command {self.argv[0]}"


_RUNNING: set[subprocess.Popen[bytes]] = set()
"""Commands being run now: killed at process exit when the flush has run out of time."""


def _kill(process: subprocess.Popen[bytes], *, wait: bool = True) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended on its own meanwhile
        os.killpg(process.pid, signal.SIGKILL)
    if wait:
        process.communicate()


@frozen
class NotifierStatistics:
    sent: int
    failed: int
    dropped: int
    pending: int


_LIVE: weakref.WeakSet[Notifier] = weakref.WeakSet()


@define(eq=False)
class Notifier:
    """Tells a webhook or a command about the events named in `on` (see `NOTIFY_EVENTS`),
    in the background. Pass it in a `Harness`'s or a board's ``sinks``."""

    target: Webhook | Command
    on: frozenset[str] = field(default=frozenset(DEFAULT_EVENTS), converter=_names)
    timeout: float = DEFAULT_TIMEOUT
    _queue: queue.SimpleQueue[bytes] = field(init=False, factory=queue.SimpleQueue)
    _lock: threading.Lock = field(init=False, factory=threading.Lock)
    _thread: threading.Thread | None = field(init=False, default=None)
    _pending: int = field(init=False, default=0)
    _sent: int = field(init=False, default=0)
    _failed: int = field(init=False, default=0)
    _dropped: int = field(init=False, default=0)
    _idle: threading.Condition = field(init=False)

    @_idle.default
    def _make_idle(self) -> threading.Condition:
        return threading.Condition(self._lock)

    def __attrs_post_init__(self) -> None:
        unknown = sorted(set(self.on) - set(NOTIFY_EVENTS))
        if unknown or not self.on:
            raise ConfigurationError(
                f"notify 'on' must name some of {list(NOTIFY_EVENTS)} (got {sorted(self.on)!r})"
            )
        check_positive("timeout", self.timeout, owner="notify")

    @classmethod
    def webhook(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        on: Iterable[str] = DEFAULT_EVENTS,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Notifier:
        """POST each event as JSON to an ``http`` or ``https`` `url`."""
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigurationError(f"a notify webhook must be an http(s) URL (got {url!r})")
        return cls(Webhook(url, dict(headers or {})), on=frozenset(on), timeout=timeout)

    @classmethod
    def command(
        cls,
        argv: Sequence[str],
        *,
        on: Iterable[str] = DEFAULT_EVENTS,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Notifier:
        """Run `argv` (no shell) for each event, the event as JSON on its stdin."""
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) and a for a in argv):
            raise ConfigurationError(
                f"a notify command must be a non-empty list of strings (got {argv!r})"
            )
        return cls(Command(tuple(argv)), on=frozenset(on), timeout=timeout)

    def emit(self, event: object) -> None:
        """Queue `event` if this notifier is subscribed to it; never blocks, never raises for
        the delivery."""
        name = _event_name(event)
        if name is None or name not in self.on:
            return
        body = json.dumps(notification_body(event, name), default=str).encode()  # type: ignore[arg-type]
        with self._lock:
            if self._pending >= MAX_PENDING:
                self._dropped += 1
                return
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name=f"harness-notify {self.target}", daemon=True
                )
                self._thread.start()
                _LIVE.add(self)
        self._queue.put(body)

    def flush(self, timeout: float = EXIT_FLUSH) -> bool:
        """Wait at most `timeout` seconds for the queued notifications; True when none is left."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def statistics(self) -> NotifierStatistics:
        with self._lock:
            return NotifierStatistics(self._sent, self._failed, self._dropped, self._pending)

    def _work(self) -> None:
        while True:
            body = self._queue.get()
            try:
                self.target.deliver(body, self.timeout)
            except Exception as exc:  # a notifier's failure is never the run's
                self._record(failed=exc)
            else:
                self._record(failed=None)

    def _record(self, failed: Exception | None) -> None:
        # Log before the delivery stops counting as pending, so a `flush` that returns has
        # seen the warning too.
        if failed is not None:
            with self._lock:
                self._failed += 1
                first = self._failed == 1
            if first:
                _log.warning(
                    "notify.failed",
                    notifier=str(self.target),
                    error=f"{type(failed).__name__}: {failed}",
                    note="later failures of this notifier are counted, not logged",
                )
        with self._idle:
            self._pending -= 1
            if failed is None:
                self._sent += 1
            self._idle.notify_all()

    def __repr__(self) -> str:
        return f"Notifier({self.target}, on={sorted(self.on)})"


@atexit.register
def _flush_at_exit() -> None:
    deadline = time.monotonic() + EXIT_FLUSH
    for notifier in list(_LIVE):  # they deliver in parallel: one deadline for all
        notifier.flush(max(0.0, deadline - time.monotonic()))
    for process in list(_RUNNING):  # a command still running would outlive us
        _kill(process, wait=False)


NOTIFY = Schema(
    "a notifier",
    [
        Key("webhook", "string", "An http(s) URL each event is POSTed to as JSON."),
        Key("headers", "table", "HTTP headers sent with each webhook POST.", default_text="none"),
        Key(
            "command",
            "array of strings",
            "A command (no shell) run for each event, the event as JSON on its stdin.",
        ),
        Key(
            "on",
            "array of strings",
            "The events to send: some of " + ", ".join(f"`{n}`" for n in NOTIFY_EVENTS) + ".",
            default_text=", ".join(f"`{n}`" for n in DEFAULT_EVENTS),
        ),
        Key(
            "timeout",
            "number",
            "Seconds one delivery may take; a failed one is logged once, never raised.",
            default=DEFAULT_TIMEOUT,
        ),
    ],
    heading="Notifications: [[notify]]",
    help="Each `[[notify]]` table is one notifier: give `webhook` or `command`. Deliveries run "
    "in the background and never hold up or end the run (see docs/notifications.md).",
)


def notifier_from_config(table: Mapping[str, Any], where: str) -> Notifier:
    """The notifier a ``[[notify]]`` table describes; errors name `where` and the key."""
    settings = NOTIFY.validate(table, where)
    kind: Literal["webhook", "command"]
    if ("webhook" in settings) == ("command" in settings):
        raise ConfigurationError(f"{where}: give exactly one of 'webhook' and 'command'")
    kind = "webhook" if "webhook" in settings else "command"
    if kind == "command" and "headers" in settings:
        raise ConfigurationError(f"{where}.headers: only a webhook takes headers")
    headers = settings.get("headers", {})
    bad = [k for k, v in headers.items() if not isinstance(v, str)]
    if bad:
        raise ConfigurationError(f"{where}.headers.{bad[0]} must be a string")
    on = settings.get("on", DEFAULT_EVENTS)
    timeout = settings.get("timeout", DEFAULT_TIMEOUT)
    try:
        if kind == "webhook":
            return Notifier.webhook(settings["webhook"], headers=headers, on=on, timeout=timeout)
        return Notifier.command(settings["command"], on=on, timeout=timeout)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None


def notifiers_from_config(tables: object, where: str = "notify") -> tuple[Notifier, ...]:
    """The notifiers of a ``[[notify]]`` array (or one ``[notify]`` table)."""
    if isinstance(tables, Mapping):
        return (notifier_from_config(tables, where),)
    if not isinstance(tables, list):
        raise ConfigurationError(f"{where} must be a table or an array of tables (got {tables!r})")
    return tuple(notifier_from_config(t, f"{where}[{i}]") for i, t in enumerate(tables))
