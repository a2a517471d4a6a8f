"""What extenders need: the protocols other packages implement, the session and policy types a
strategy or a policy works with, and the helpers that describe and validate config tables.

Users of the loop import `harness`; code that adds a strategy, a policy, a model client (which
raises `UsageLimitError` for a usage limit), a sink or a config-driven component imports this
module. The `checks`, `termination` and `strategies` packages use only these names (and
`harness`'s own): no package imports another's private modules (tests/test_architecture.py
enforces it). Consumers of events have their own face, `harness.events`.

A map by audience:

- a strategy: `Strategy`, `Run`, `RunConfig`, `SingleSession`, `Session`, `SessionEnd`,
  `rejection_feedback`, `DONE_TOOL`, `NOT_EXECUTED`;
- a policy, a sensor or a check: `Policy`, `PolicySession`, `Decision`, `CONTINUE`, `Limit`,
  `Scope`, `ScopesRun`, `SensorReading`, `ProtectsPaths`, `SessionStateSnapshot`,
  `SessionStore`, `HistoryView`, `ToolOutcome`, `ChecksConsumed`, `CheckError`;
- the verifier's records: `Baseline`, `BaselineRecorded`, `ProtectedPaths`,
  `ProtectedPathsRecorded`, `ProtectedPathsChanged`, `Tampering`, `PathGuard`;
- a model client: `ModelClient`, `ModelRequest`, `ModelResponse`, `ToolSpec`, `KnowsPrices`,
  `ReadsClock`, `ForksAttempts`, `UsageLimit`, `UsageLimitError`, `USAGE_LIMIT`,
  `find_usage_limit`, `render_prompt`, `RunPaused`, `RunResumed`; a model that climbs when
  the run plateaus:
  `Escalates`, `JudgedTurn`, `Escalation`, `ModelEscalated`;
- tools and processes: `as_tools`, `BUILTIN_TOOL_NAMES`, `builtin_tools`, `CommandSandbox`,
  `is_secret_name`, `ProcessResult`, `run_process`, `open_in_workspace`,
  `resolve_in_workspace`, `remove_tree`, `read_regular_file`, `FileRefused`; the files another
  process could have placed (records, caches, state, an agent's settings), read with a bound:
  `read_text_file`, `read_json_file`, `parse_json`;
- events and transcripts: `EventStream`, `stream_events`, `SinkFailed`, `ContextCompacted`,
  `TranscriptReader`, `RunTally`, `UnknownEvent`, `UnknownHalt`, `check_output_file`,
  `dump_json`, `dump_line`;
- config tables and their reference: `Schema`, `Key`, `Variants`, `REQUIRED`, `MODELS`, `PAUSE`,
  `PRICE`, `RETRY`, `NOTIFY`, `NOTIFY_EVENTS`, `notifiers_from_config`, `render_schema`,
  `render_variants`, `check_positive`, `check_type`, `of_type`, `positive`;
- plumbing: `Clock`, `SystemClock`, `implements`, `lazy_exports`, `get_logger`,
  `LibraryLogger`.

The config-table schemas (`Schema`, `PAUSE`, `MODELS`, ...), the reference renderers, the
transcript readers and the verifier's records load on first use, so a run that does not read
a spec or use those features does not pay to import them.
"""

import typing

from ._check_error import CheckError
from ._clock import Clock, SystemClock
from ._events._run import SinkFailed
from ._events._stream import EventStream, stream_events
from ._fs._files import FileRefused, read_regular_file, read_text_file
from ._fs._jsonl import check_output_file, dump_json, dump_line, parse_json, read_json_file
from ._lazy import lazy_exports
from ._limits import USAGE_LIMIT, UsageLimit, UsageLimitError
from ._log import LibraryLogger, get_logger
from ._loop._run import Run, SingleSession, Strategy
from ._loop._run_state import RunConfig
from ._loop._session import DONE_TOOL, Session, SessionEnd, rejection_feedback
from ._messages import NOT_EXECUTED, ModelRequest, ModelResponse, ToolSpec
from ._model import ChecksConsumed, ForksAttempts, KnowsPrices, ModelClient, ReadsClock
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
from ._state import HistoryView, SessionStateSnapshot, SessionStore, ToolOutcome
from ._tools._base import as_tools
from ._validate import check_positive, check_type, of_type, positive

if typing.TYPE_CHECKING:
    from ._escalation import Escalates, Escalation, JudgedTurn
    from ._events._base import UnknownEvent
    from ._events._context import ContextCompacted
    from ._events._escalation import ModelEscalated
    from ._events._pause import RunPaused, RunResumed
    from ._events._reader import RunTally, TranscriptReader
    from ._events._verifier import BaselineRecorded, ProtectedPathsChanged, ProtectedPathsRecorded
    from ._fs._path_guard import PathGuard
    from ._fs._workspace import open_in_workspace, remove_tree, resolve_in_workspace
    from ._pause_table import PAUSE
    from ._process._child import ProcessResult, run_process
    from ._protected import ProtectedPaths, Tampering
    from ._providers._cli_agent import render_prompt
    from ._providers._limit_messages import find_usage_limit
    from ._providers._model_config import MODELS
    from ._providers._pricing import PRICE
    from ._providers._retry import RETRY
    from ._reference import render_schema, render_variants
    from ._result import UnknownHalt
    from ._schema import REQUIRED, Key, Schema, Variants
    from ._secrets import is_secret_name
    from ._sinks._notify import NOTIFY, NOTIFY_EVENTS, notifiers_from_config
    from ._tools._registry import BUILTIN_TOOL_NAMES, builtin_tools
    from ._tools._shell import CommandSandbox
    from ._verification import Baseline

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "render_prompt": "harness._providers._cli_agent",
        "open_in_workspace": "harness._fs._workspace",
        "remove_tree": "harness._fs._workspace",
        "resolve_in_workspace": "harness._fs._workspace",
        "ContextCompacted": "harness._events._context",
        "find_usage_limit": "harness._providers._limit_messages",
        "NOTIFY": "harness._sinks._notify",
        "NOTIFY_EVENTS": "harness._sinks._notify",
        "notifiers_from_config": "harness._sinks._notify",
        "ProcessResult": "harness._process._child",
        "run_process": "harness._process._child",
        "MODELS": "harness._providers._model_config",
        "PRICE": "harness._providers._pricing",
        "RETRY": "harness._providers._retry",
        "render_schema": "harness._reference",
        "render_variants": "harness._reference",
        "BUILTIN_TOOL_NAMES": "harness._tools._registry",
        "builtin_tools": "harness._tools._registry",
        "CommandSandbox": "harness._tools._shell",
        "is_secret_name": "harness._secrets",
        "PathGuard": "harness._fs._path_guard",
        "PAUSE": "harness._pause_table",
        "RunPaused": "harness._events._pause",
        "Escalates": "harness._escalation",
        "Escalation": "harness._escalation",
        "JudgedTurn": "harness._escalation",
        "ModelEscalated": "harness._events._escalation",
        "RunResumed": "harness._events._pause",
        "REQUIRED": "harness._schema",
        "Key": "harness._schema",
        "Schema": "harness._schema",
        "Variants": "harness._schema",
        "RunTally": "harness._events._reader",
        "TranscriptReader": "harness._events._reader",
        "UnknownEvent": "harness._events._base",
        "UnknownHalt": "harness._result",
        "ProtectedPaths": "harness._protected",
        "Tampering": "harness._protected",
        "Baseline": "harness._verification",
        "BaselineRecorded": "harness._events._verifier",
        "ProtectedPathsChanged": "harness._events._verifier",
        "ProtectedPathsRecorded": "harness._events._verifier",
    },
)

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "Baseline",
    "BaselineRecorded",
    "CONTINUE",
    "CheckError",
    "ChecksConsumed",
    "Clock",
    "CommandSandbox",
    "ContextCompacted",
    "DONE_TOOL",
    "Decision",
    "Escalates",
    "Escalation",
    "EventStream",
    "FileRefused",
    "ForksAttempts",
    "HistoryView",
    "JudgedTurn",
    "Key",
    "KnowsPrices",
    "LibraryLogger",
    "Limit",
    "MODELS",
    "ModelClient",
    "ModelEscalated",
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
    "builtin_tools",
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
    "parse_json",
    "positive",
    "read_json_file",
    "read_regular_file",
    "read_text_file",
    "rejection_feedback",
    "remove_tree",
    "render_prompt",
    "render_schema",
    "render_variants",
    "resolve_in_workspace",
    "run_process",
    "stream_events",
]
