"""What extenders need: the protocols other packages implement, the session and policy types a
strategy or a policy works with, and the helpers that describe and validate config tables.

Users of the loop import `harness`; code that adds a strategy, a policy, a model client (which
raises `UsageLimitError` for a usage limit), a sink or a config-driven component imports this
module. The `checks`, `termination` and `strategies`
packages use only these names (and `harness`'s own): no package imports another's private
modules (tests/test_architecture.py enforces it).

The config-table schemas (`Schema`, `PAUSE`, `MODELS`, ...), the reference renderers, the
transcript readers and the verifier's records load on first use, so a run that does not read
a spec or use those features does not pay to import them.
"""

import typing

from ._clock import Clock, SystemClock
from ._events import SinkFailed
from ._files import FileRefused, read_regular_file
from ._jsonl import check_output_file, dump_json, dump_line
from ._lazy import lazy_exports
from ._limits import USAGE_LIMIT, UsageLimit, UsageLimitError
from ._log import LibraryLogger, get_logger
from ._messages import ModelRequest, ModelResponse, ToolSpec
from ._model import ChecksConsumed, KnowsPrices, ModelClient, ReadsClock
from ._policy import (
    CONTINUE,
    Decision,
    Limit,
    Policy,
    PolicySession,
    ProtectsPaths,
    Scope,
    ScopesRun,
    SensorReading,
)
from ._protocols import implements
from ._run import Run, SingleSession, Strategy
from ._run_state import RunConfig
from ._session import DONE_TOOL, NOT_EXECUTED, Session, SessionEnd, rejection_feedback
from ._state import HistoryView, SessionStateSnapshot, SessionStore, ToolOutcome
from ._streaming import EventStream, stream_events
from ._tools import as_tools
from ._validate import check_positive, check_type, of_type, positive

if typing.TYPE_CHECKING:
    from ._cli_agent import render_prompt
    from ._compaction import ContextCompacted
    from ._limit_messages import find_usage_limit
    from ._notify import NOTIFY, NOTIFY_EVENTS, notifiers_from_config
    from ._path_guard import PathGuard
    from ._pause_events import RunPaused, RunResumed
    from ._pause_table import PAUSE
    from ._process import ProcessResult, run_process
    from ._protected import ProtectedPaths, Tampering
    from ._providers._model_config import MODELS
    from ._providers._pricing import PRICE
    from ._providers._retry import RETRY
    from ._reference import render_schema, render_variants
    from ._schema import REQUIRED, Key, Schema, Variants
    from ._secrets import is_secret_name
    from ._shell import CommandSandbox
    from ._transcript import RunTally, TranscriptReader, UnknownEvent, UnknownHalt
    from ._verification import (
        Baseline,
        BaselineRecorded,
        ProtectedPathsChanged,
        ProtectedPathsRecorded,
    )
    from ._workspace import open_in_workspace, remove_tree, resolve_in_workspace

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "render_prompt": "harness._cli_agent",
        "open_in_workspace": "harness._workspace",
        "remove_tree": "harness._workspace",
        "resolve_in_workspace": "harness._workspace",
        "ContextCompacted": "harness._compaction",
        "find_usage_limit": "harness._limit_messages",
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
        "CommandSandbox": "harness._shell",
        "is_secret_name": "harness._secrets",
        "PathGuard": "harness._path_guard",
        "PAUSE": "harness._pause_table",
        "RunPaused": "harness._pause_events",
        "RunResumed": "harness._pause_events",
        "REQUIRED": "harness._schema",
        "Key": "harness._schema",
        "Schema": "harness._schema",
        "Variants": "harness._schema",
        "RunTally": "harness._transcript",
        "TranscriptReader": "harness._transcript",
        "UnknownEvent": "harness._transcript",
        "UnknownHalt": "harness._transcript",
        "ProtectedPaths": "harness._protected",
        "Tampering": "harness._protected",
        "Baseline": "harness._verification",
        "BaselineRecorded": "harness._verification",
        "ProtectedPathsChanged": "harness._verification",
        "ProtectedPathsRecorded": "harness._verification",
    },
)

__all__ = [
    "Baseline",
    "BaselineRecorded",
    "CONTINUE",
    "ChecksConsumed",
    "Clock",
    "CommandSandbox",
    "ContextCompacted",
    "DONE_TOOL",
    "Decision",
    "EventStream",
    "FileRefused",
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
    "NOT_EXECUTED",
    "PAUSE",
    "PRICE",
    "PathGuard",
    "Policy",
    "PolicySession",
    "ProcessResult",
    "ProtectedPaths",
    "ProtectedPathsChanged",
    "ProtectedPathsRecorded",
    "ProtectsPaths",
    "REQUIRED",
    "RETRY",
    "ReadsClock",
    "Run",
    "RunConfig",
    "RunPaused",
    "RunResumed",
    "RunTally",
    "Schema",
    "Scope",
    "ScopesRun",
    "SensorReading",
    "Session",
    "SessionEnd",
    "SessionStateSnapshot",
    "SessionStore",
    "SingleSession",
    "SinkFailed",
    "Strategy",
    "SystemClock",
    "Tampering",
    "ToolOutcome",
    "ToolSpec",
    "TranscriptReader",
    "USAGE_LIMIT",
    "UnknownEvent",
    "UnknownHalt",
    "UsageLimit",
    "UsageLimitError",
    "Variants",
    "as_tools",
    "check_output_file",
    "check_positive",
    "check_type",
    "dump_json",
    "dump_line",
    "find_usage_limit",
    "get_logger",
    "implements",
    "is_secret_name",
    "lazy_exports",
    "notifiers_from_config",
    "of_type",
    "open_in_workspace",
    "positive",
    "read_regular_file",
    "rejection_feedback",
    "remove_tree",
    "render_prompt",
    "render_schema",
    "render_variants",
    "resolve_in_workspace",
    "run_process",
    "stream_events",
]
