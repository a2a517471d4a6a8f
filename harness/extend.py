"""What extenders need: the protocols other packages implement, the session and policy types a
strategy or a policy works with, and the helpers that describe and validate config tables.

Users of the loop import `harness`; code that adds a strategy, a policy, a model client, a sink
or a config-driven component imports this module. The `checks`, `termination` and `strategies`
packages use only these names (and `harness`'s own): no package imports another's private
modules (tests/test_architecture.py enforces it).

The config-table descriptions of the model tables (`MODELS`, `PRICE`, `RETRY`) and the reference
renderers load on first use, so a run that does not read a spec does not pay to import them.
"""

import typing

from ._clock import Clock, SystemClock
from ._jsonl import check_output_file, dump_json, dump_line
from ._lazy import lazy_exports
from ._log import LibraryLogger, get_logger
from ._messages import ModelRequest, ModelResponse, ToolSpec
from ._model import ChecksConsumed, KnowsPrices, ModelClient, ReadsClock
from ._policy import (
    CONTINUE,
    Decision,
    Limit,
    Policy,
    PolicySession,
    Scope,
    ScopesRun,
    SensorReading,
)
from ._run import Run, SingleSession, Strategy
from ._run_state import RunConfig
from ._schema import REQUIRED, Key, Schema, Variants
from ._session import DONE_TOOL, Session, SessionEnd, rejection_feedback
from ._state import HistoryView, SessionStateSnapshot, SessionStore, ToolOutcome
from ._streaming import EventStream, stream_events
from ._tools import as_tools
from ._transcript import UnknownEvent, UnknownHalt
from ._validate import check_positive, positive
from ._workspace import open_in_workspace, resolve_in_workspace

if typing.TYPE_CHECKING:
    from ._cli_agent import render_prompt
    from ._notify import NOTIFY, NOTIFY_EVENTS, notifiers_from_config
    from ._process import ProcessResult, run_process
    from ._providers._model_config import MODELS
    from ._providers._pricing import PRICE
    from ._providers._retry import RETRY
    from ._reference import render_schema, render_variants

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "render_prompt": "harness._cli_agent",
        "NOTIFY": "harness._notify",
        "NOTIFY_EVENTS": "harness._notify",
        "notifiers_from_config": "harness._notify",
        "ProcessResult": "harness._process",
        "run_process": "harness._process",
        "MODELS": "harness._providers._model_config",
        "PRICE": "harness._providers._pricing",
        "RETRY": "harness._providers._retry",
        "render_schema": "harness._reference",
        "render_variants": "harness._reference",
    },
)

__all__ = [
    "CONTINUE",
    "ChecksConsumed",
    "Clock",
    "DONE_TOOL",
    "Decision",
    "EventStream",
    "HistoryView",
    "Key",
    "KnowsPrices",
    "LibraryLogger",
    "Limit",
    "MODELS",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "NOTIFY",
    "NOTIFY_EVENTS",
    "PRICE",
    "Policy",
    "PolicySession",
    "ProcessResult",
    "REQUIRED",
    "RETRY",
    "ReadsClock",
    "Run",
    "RunConfig",
    "Schema",
    "Scope",
    "ScopesRun",
    "SensorReading",
    "Session",
    "SessionEnd",
    "SessionStateSnapshot",
    "SessionStore",
    "SingleSession",
    "Strategy",
    "SystemClock",
    "ToolOutcome",
    "ToolSpec",
    "UnknownEvent",
    "UnknownHalt",
    "Variants",
    "as_tools",
    "check_output_file",
    "check_positive",
    "dump_json",
    "dump_line",
    "get_logger",
    "lazy_exports",
    "notifiers_from_config",
    "open_in_workspace",
    "positive",
    "rejection_feedback",
    "render_prompt",
    "render_schema",
    "render_variants",
    "resolve_in_workspace",
    "run_process",
    "stream_events",
]
