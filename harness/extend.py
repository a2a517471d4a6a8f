"""What extenders need: the protocols other packages implement, the session and policy types a
strategy or a policy works with, and the helpers that describe and validate config tables.

Users of the loop import `harness`; code that adds a strategy, a policy, a model client (which
raises `UsageLimitError` for a usage limit), a sink or a config-driven component imports this
module. The `checks`, `termination` and `strategies` packages use only these names (and
`harness`'s own): no package imports another's private modules (tests/test_architecture.py
enforces it). Every event kind, the sinks, the live stream and the transcript reader have one
door, `harness.events`; the event names this module exported before (`RunPaused`,
`BaselineRecorded`, `TranscriptReader`, ...) still import from here for one release, with a
`DeprecationWarning` naming their home there.

A map by audience:

- a strategy: `Strategy`, `Run`, `RunConfig`, `SingleSession`, `Session`, `SessionEnd`,
  `rejection_feedback`, `DONE_TOOL`, `NOT_EXECUTED`;
- a policy, a sensor or a check: `Policy`, `PolicySession`, `Decision`, `CONTINUE`, `Limit`,
  `Scope`, `ScopesRun`, `SensorReading`, `ProtectsPaths`, `SessionStateSnapshot`,
  `SessionStore`, `HistoryView`, `ToolOutcome`, `ChecksConsumed`, `CheckError`;
- the verifier's records: `Baseline`, `ProtectedPaths`, `Tampering`, `PathGuard`;
- a model client: `ModelClient`, `ModelRequest`, `ModelResponse`, `ToolSpec`, `KnowsPrices`,
  `ReadsClock`, `ForksAttempts`, `UsageLimit`, `UsageLimitError`, `USAGE_LIMIT`,
  `find_usage_limit`, `render_prompt`; a model that climbs when the run plateaus:
  `Escalates`, `JudgedTurn`, `Escalation`;
- tools and processes: `as_tools`, `BUILTIN_TOOL_NAMES`, `builtin_tools`, `CommandSandbox`,
  `is_secret_name`, `ProcessResult`, `run_process`, `bytecode_env`, `bytecode_prefix`,
  `FRESH_BYTECODE`, `default_cache_dir`, `CACHE_ENV`, `open_in_workspace`,
  `resolve_in_workspace`, `remove_tree`, `read_regular_file`, `FileRefused`; the files another
  process could have placed (records, caches, state, an agent's settings), read with a bound:
  `read_text_file`, `read_json_file`, `parse_json`; folders the harness owns (made without
  following links, swept only by their mark): `private_folder`, `owned_folder`,
  `remove_owned`, `FolderRefused`; the folders that are not work, one list for every part
  that walks a workspace: `NOT_WORK`, `is_work`;
- transcripts: `UnknownHalt`, `check_output_file`, `dump_json`, `dump_line`;
- config tables and their reference: `Schema`, `Key`, `Variants`, `REQUIRED`, `MODELS`, `PAUSE`,
  `PRICE`, `RETRY`, `NOTIFY`, `NOTIFY_EVENTS`, `notifiers_from_config`, `render_schema`,
  `render_variants`, `check_positive`, `check_type`, `of_type`, `positive`;
- plumbing: `Clock`, `SystemClock`, `implements`, `lazy_exports`, `get_logger`,
  `LibraryLogger`.

The config-table schemas (`Schema`, `PAUSE`, `MODELS`, ...), the reference renderers and the
verifier's records load on first use, so a run that does not read
a spec or use those features does not pay to import them.
"""

import typing

from ._check_error import CheckError
from ._clock import Clock, SystemClock
from ._lazy import lazy_exports
from ._log import LibraryLogger, get_logger
from ._protocols import implements
from ._validate import check_positive, check_type, of_type, positive

if typing.TYPE_CHECKING:
    from ._escalation import Escalates, Escalation, JudgedTurn
    from ._events._tool import ToolOutcome
    from ._fs._files import FileRefused, read_regular_file, read_text_file
    from ._fs._jsonl import check_output_file, dump_json, dump_line, parse_json, read_json_file
    from ._fs._not_work import NOT_WORK, is_work
    from ._fs._owned import FolderRefused, owned_folder, private_folder, remove_owned
    from ._fs._path_guard import PathGuard
    from ._fs._workspace import open_in_workspace, remove_tree, resolve_in_workspace
    from ._halt import UnknownHalt
    from ._limits import USAGE_LIMIT, UsageLimit, UsageLimitError
    from ._loop._feedback import rejection_feedback
    from ._loop._run import Run, SingleSession, Strategy
    from ._loop._run_state import RunConfig
    from ._loop._session import Session, SessionEnd
    from ._loop._tool_calls import DONE_TOOL
    from ._messages import NOT_EXECUTED, ModelRequest, ModelResponse, ToolSpec
    from ._model import ChecksConsumed, ForksAttempts, KnowsPrices, ModelClient, ReadsClock
    from ._pause_table import PAUSE
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
    from ._process._bytecode import (
        CACHE_ENV,
        FRESH_BYTECODE,
        bytecode_env,
        bytecode_prefix,
        default_cache_dir,
    )
    from ._process._child import ProcessResult, run_process
    from ._process._sandbox import CommandSandbox
    from ._protected import ProtectedPaths, Tampering
    from ._providers._cli_agent import render_prompt
    from ._providers._limit_messages import find_usage_limit
    from ._providers._model_config import MODELS
    from ._providers._tables import PRICE, RETRY
    from ._reference import render_schema, render_variants
    from ._schema import REQUIRED, Key, Schema, Variants
    from ._secrets import is_secret_name
    from ._sinks._notify import NOTIFY, NOTIFY_EVENTS, notifiers_from_config
    from ._state import HistoryView, SessionStateSnapshot, SessionStore
    from ._tools._base import as_tools
    from ._tools._registry import BUILTIN_TOOL_NAMES, builtin_tools
    from ._verification import Baseline

# Event names exported here before `harness.events` was their one door: importable from here,
# with a DeprecationWarning naming their home, until the next release.
_MOVED_TO_EVENTS = [
    "BaselineRecorded",
    "ContextCompacted",
    "EventStream",
    "ModelEscalated",
    "ProtectedPathsChanged",
    "ProtectedPathsRecorded",
    "RunPaused",
    "RunResumed",
    "RunTally",
    "SinkFailed",
    "TranscriptReader",
    "UnknownEvent",
    "stream_events",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    globals(),
    {
        "CACHE_ENV": "harness._process._bytecode",
        "FRESH_BYTECODE": "harness._process._bytecode",
        "bytecode_env": "harness._process._bytecode",
        "bytecode_prefix": "harness._process._bytecode",
        "default_cache_dir": "harness._process._bytecode",
        "FileRefused": "harness._fs._files",
        "NOT_WORK": "harness._fs._not_work",
        "is_work": "harness._fs._not_work",
        "read_regular_file": "harness._fs._files",
        "read_text_file": "harness._fs._files",
        "parse_json": "harness._fs._jsonl",
        "read_json_file": "harness._fs._jsonl",
        "check_output_file": "harness._fs._jsonl",
        "dump_json": "harness._fs._jsonl",
        "dump_line": "harness._fs._jsonl",
        "USAGE_LIMIT": "harness._limits",
        "UsageLimit": "harness._limits",
        "UsageLimitError": "harness._limits",
        "Run": "harness._loop._run",
        "SingleSession": "harness._loop._run",
        "Strategy": "harness._loop._run",
        "RunConfig": "harness._loop._run_state",
        "DONE_TOOL": "harness._loop._tool_calls",
        "Session": "harness._loop._session",
        "SessionEnd": "harness._loop._session",
        "rejection_feedback": "harness._loop._feedback",
        "NOT_EXECUTED": "harness._messages",
        "ModelRequest": "harness._messages",
        "ModelResponse": "harness._messages",
        "ToolSpec": "harness._messages",
        "ChecksConsumed": "harness._model",
        "ForksAttempts": "harness._model",
        "KnowsPrices": "harness._model",
        "ModelClient": "harness._model",
        "ReadsClock": "harness._model",
        "CONTINUE": "harness._policy",
        "Decision": "harness._policy",
        "Limit": "harness._policy",
        "Policy": "harness._policy",
        "PolicySession": "harness._policy",
        "ProtectsPaths": "harness._policy",
        "Scope": "harness._policy",
        "ScopesRun": "harness._policy",
        "SensorReading": "harness._policy",
        "HistoryView": "harness._state",
        "SessionStateSnapshot": "harness._state",
        "SessionStore": "harness._state",
        "ToolOutcome": "harness._events._tool",
        "as_tools": "harness._tools._base",
        "render_prompt": "harness._providers._cli_agent",
        "open_in_workspace": "harness._fs._workspace",
        "remove_tree": "harness._fs._workspace",
        "resolve_in_workspace": "harness._fs._workspace",
        "find_usage_limit": "harness._providers._limit_messages",
        "NOTIFY": "harness._sinks._notify",
        "NOTIFY_EVENTS": "harness._sinks._notify",
        "notifiers_from_config": "harness._sinks._notify",
        "ProcessResult": "harness._process._child",
        "run_process": "harness._process._child",
        "MODELS": "harness._providers._model_config",
        "PRICE": "harness._providers._tables",
        "RETRY": "harness._providers._tables",
        "render_schema": "harness._reference",
        "render_variants": "harness._reference",
        "BUILTIN_TOOL_NAMES": "harness._tools._registry",
        "builtin_tools": "harness._tools._registry",
        "CommandSandbox": "harness._process._sandbox",
        "is_secret_name": "harness._secrets",
        "PathGuard": "harness._fs._path_guard",
        "FolderRefused": "harness._fs._owned",
        "owned_folder": "harness._fs._owned",
        "private_folder": "harness._fs._owned",
        "remove_owned": "harness._fs._owned",
        "PAUSE": "harness._pause_table",
        "Escalates": "harness._escalation",
        "Escalation": "harness._escalation",
        "JudgedTurn": "harness._escalation",
        "REQUIRED": "harness._schema",
        "Key": "harness._schema",
        "Schema": "harness._schema",
        "Variants": "harness._schema",
        "UnknownHalt": "harness._halt",
        "ProtectedPaths": "harness._protected",
        "Tampering": "harness._protected",
        "Baseline": "harness._verification",
    },
    moved={name: f"harness.events.{name}" for name in _MOVED_TO_EVENTS},
)

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "Baseline",
    "CACHE_ENV",
    "CONTINUE",
    "CheckError",
    "ChecksConsumed",
    "Clock",
    "CommandSandbox",
    "DONE_TOOL",
    "Decision",
    "Escalates",
    "Escalation",
    "FRESH_BYTECODE",
    "FileRefused",
    "FolderRefused",
    "ForksAttempts",
    "HistoryView",
    "JudgedTurn",
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
    "NOT_WORK",
    "PAUSE",
    "PRICE",
    "PathGuard",
    "Policy",
    "PolicySession",
    "ProcessResult",
    "ProtectedPaths",
    "ProtectsPaths",
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
    "Tampering",
    "ToolOutcome",
    "ToolSpec",
    "USAGE_LIMIT",
    "UnknownHalt",
    "UsageLimit",
    "UsageLimitError",
    "Variants",
    "as_tools",
    "builtin_tools",
    "bytecode_env",
    "bytecode_prefix",
    "check_output_file",
    "check_positive",
    "check_type",
    "default_cache_dir",
    "dump_json",
    "dump_line",
    "find_usage_limit",
    "get_logger",
    "implements",
    "is_secret_name",
    "is_work",
    "lazy_exports",
    "notifiers_from_config",
    "of_type",
    "open_in_workspace",
    "owned_folder",
    "parse_json",
    "positive",
    "private_folder",
    "read_json_file",
    "read_regular_file",
    "read_text_file",
    "rejection_feedback",
    "remove_owned",
    "remove_tree",
    "render_prompt",
    "render_schema",
    "render_variants",
    "resolve_in_workspace",
    "run_process",
]
