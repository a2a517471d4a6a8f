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
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, MutableMapping
from typing import Any

import structlog

_QUIETED: set[str] = set()


def get_logger(name: str) -> Any:
    """A structlog-style logger (``log.warning("event.name", key=value)``) for `name`: structlog's
    when the application configured structlog, otherwise a wrapper of stdlib's logger, which
    is silent until the application configures `logging`."""
    if structlog.is_configured():
        return structlog.get_logger(name)
    top = name.partition(".")[0]
    if top not in _QUIETED:
        logging.getLogger(top).addHandler(logging.NullHandler())
        _QUIETED.add(top)
    return structlog.wrap_logger(
        logging.getLogger(name),
        processors=[_plain_values, _RENDER],
        wrapper_class=structlog.stdlib.BoundLogger,
    )


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


_RENDER = structlog.processors.LogfmtRenderer(key_order=["event"], bool_as_flag=False)
