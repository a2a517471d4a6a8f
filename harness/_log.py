"""The library's loggers: silent until the application configures logging, as a library's are.

structlog's default configuration prints every event, DEBUG included, to stdout, so a library
that logs through it unconfigured talks over its host. `get_logger` therefore decides at each
use: once the application has configured structlog (`structlog.configure`, which `harness run`
does for its own output), it is structlog's logger; until then it is the standard library's
``logging.getLogger(name)``, wrapped so that the event name and its keys become one logfmt line
(``event=run.halted run_id=... reason=...``). The package's top-level loggers carry a
``NullHandler``, so nothing is printed (not even WARNINGs, through logging's "last resort")
until the application configures `logging` (``logging.basicConfig(level=logging.INFO)``) or
structlog.

structlog itself is imported only when it is needed: by an application that configured it
(it is then loaded already), or by the first line the standard library's logger would print.
A run in a host that configured no logging never loads it.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any

_QUIETED: set[str] = set()


def get_logger(name: str) -> Any:
    """A structlog-style logger (``log.warning("event.name", key=value)``) for `name`: structlog's
    when the application configured structlog, otherwise a wrapper of stdlib's logger, which
    is silent until the application configures `logging`."""
    structlog = sys.modules.get("structlog")  # an application that configured it imported it
    if structlog is not None and structlog.is_configured():
        return structlog.get_logger(name)
    top = name.partition(".")[0]
    if top not in _QUIETED:
        logging.getLogger(top).addHandler(logging.NullHandler())
        _QUIETED.add(top)
    return _StdlibLogger(logging.getLogger(name), {})


_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "exception": logging.ERROR,
    "critical": logging.CRITICAL,
}


class _StdlibLogger:
    """The standard library's logger, structlog-style: ``log.info("event", key=value)`` is one
    logfmt line (``event=... key=value``), rendered by structlog. A line below the logger's
    level is dropped before structlog is imported, so a host that configured no logging never
    loads it; anything else structlog's logger offers is structlog's."""

    __slots__ = ("_context", "_logger", "_wrapped")

    def __init__(self, logger: logging.Logger, context: Mapping[str, Any]) -> None:
        self._logger = logger
        self._context = context
        self._wrapped: Any = None

    def bind(self, **values: Any) -> _StdlibLogger:
        return _StdlibLogger(self._logger, {**self._context, **values})

    def is_enabled_for(self, level: int) -> bool:
        """Whether a line at `level` would be printed (what `StructlogSink` asks first)."""
        return self._logger.isEnabledFor(level)

    isEnabledFor = is_enabled_for  # and the standard library's name for it

    def __getattr__(self, method: str) -> Any:
        level = _LEVELS.get(method)
        if level is None:
            return getattr(self._structlog(), method)
        if not self._logger.isEnabledFor(level):
            return _drop
        return getattr(self._structlog(), method)

    def _structlog(self) -> Any:
        if self._wrapped is None:
            import structlog

            self._wrapped = structlog.wrap_logger(
                self._logger,
                processors=[_plain_values, _render()],
                wrapper_class=structlog.stdlib.BoundLogger,
            ).bind(**self._context)
        return self._wrapped


def _drop(*args: Any, **kwargs: Any) -> None:
    """A line below the logger's level."""


class LibraryLogger:
    """A module-level logger that picks structlog or stdlib (see `get_logger`) when it logs, so
    an application may configure logging after importing the package."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, method: str) -> Any:
        return getattr(get_logger(self.name), method)

    def __repr__(self) -> str:
        return f"LibraryLogger({self.name!r})"


def _plain_values(logger: Any, method: str, event: MutableMapping[str, Any]) -> Mapping[str, Any]:
    """Nested values (a halt reason, a response) as JSON, so the line reads as data."""
    for key, value in event.items():
        if isinstance(value, dict | list | tuple):
            event[key] = json.dumps(value, ensure_ascii=False, default=str)
    return event


@functools.cache
def _render() -> Any:
    """structlog's logfmt renderer, made when the first line is printed."""
    import structlog

    return structlog.processors.LogfmtRenderer(key_order=["event"], bool_as_flag=False)
