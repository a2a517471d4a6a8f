"""The harness: the turn loop, its data types, events and fixtures.

Public names by audience, as trio does it:

- `harness`: what a user of the loop needs (this module);
- `harness.testing`: what test writers need (scripted models, the fake clock, fixtures);
- `harness.extend`: what extenders need (the protocols `checks`, `termination` and `strategies`
  implement, the session and policy types, and the config-table helpers).

Names that moved from here to `harness.testing`, `harness.extend` or `harness.events` stay
importable from here for one release, with a `DeprecationWarning` that names their new home.
"""

import typing

from ._errors import (
    ConfigurationError,
    FixtureError,
    FixtureExhausted,
    FixtureUnconsumed,
    HarnessError,
    ModelError,
)
from ._lazy import lazy_exports as _lazy_exports
from ._shadowing import refuse_shadowing as _refuse_shadowing

if typing.TYPE_CHECKING:
    from ._events._base import Event
    from ._events._run import (
        CheckFailed,
        CheckFlaky,
        CheckPassed,
        FeedbackInjected,
        IterationStarted,
        RunHalted,
        RunStarted,
        RunWarning,
        SensorRead,
        ToolServerStarted,
        TurnFinished,
        TurnStarted,
        VerdictReached,
    )
    from ._events._sinks import EventSink, JsonlTranscript, StructlogSink, read_transcript
    from ._events._tool import ToolCalled
    from ._fixtures._recording import RecordingModelClient
    from ._fixtures._scripted import ScriptedModelClient
    from ._fs._workspace import (
        WorkspaceEscape,
        WorkspaceTooDeep,
        open_in_workspace,
        resolve_in_workspace,
    )
    from ._halt import (
        BudgetExceeded,
        Cancelled,
        CheckBroken,
        Completed,
        HaltReason,
        ModelFailed,
        RejectionLimit,
        SensorTripped,
        ToolServerFailed,
        UsageLimitReached,
    )
    from ._loop._cancel import CancelToken
    from ._loop._compaction import Compaction
    from ._loop._harness import Harness
    from ._loop._run import DEFAULT_SYSTEM_PROMPT
    from ._mcp._server import MCPServer
    from ._messages import FEEDBACK_TAG, Message, Role, ToolCall
    from ._model import ModelClient
    from ._pause import PauseSettings
    from ._providers import (
        AnthropicClient,
        ModelPrice,
        OpenAIClient,
        PriceTable,
        RetryPolicy,
        model_from_config,
    )
    from ._providers._agent_clients import CursorAgentClient, GeminiCliClient, OpenCodeClient
    from ._providers._cli_agent import CliAgentClient
    from ._providers._ladder import ModelLadder
    from ._result import AttemptResult, AttemptScore, RunResult, SessionTranscript, Spent
    from ._sinks._notify import Notifier
    from ._sinks._otel import OtelSink
    from ._state import SessionStateSnapshot
    from ._tools._arguments import ToolArgumentError
    from ._tools._base import Tool, ToolContext, ToolResult, tool
    from ._tools._builtin import list_files, read_file, write_file
    from ._tools._edit import edit_file, search_files
    from ._tools._plan import Plan, PlanStep, update_plan
    from ._tools._registry import workspace_tools
    from ._tools._shell import run_command_tool
    from ._usage import Usage

# Loaded on first use (PEP 562), so a run that needs none of these does not pay to import
# them: a fresh process that runs one turn is one of the bench's targets (bench/run.py, W3).
_LAZY = {
    "Event": "._events._base",
    "CheckFailed": "._events._run",
    "CheckFlaky": "._events._run",
    "CheckPassed": "._events._run",
    "FeedbackInjected": "._events._run",
    "IterationStarted": "._events._run",
    "RunHalted": "._events._run",
    "RunStarted": "._events._run",
    "RunWarning": "._events._run",
    "SensorRead": "._events._run",
    "ToolCalled": "._events._tool",
    "ToolServerStarted": "._events._run",
    "TurnFinished": "._events._run",
    "TurnStarted": "._events._run",
    "VerdictReached": "._events._run",
    "EventSink": "._events._sinks",
    "JsonlTranscript": "._events._sinks",
    "StructlogSink": "._events._sinks",
    "read_transcript": "._events._sinks",
    "ScriptedModelClient": "._fixtures._scripted",
    "CancelToken": "._loop._cancel",
    "Harness": "._loop._harness",
    "DEFAULT_SYSTEM_PROMPT": "._loop._run",
    "FEEDBACK_TAG": "._messages",
    "Message": "._messages",
    "Role": "._messages",
    "ToolCall": "._messages",
    "Usage": "._usage",
    "ModelClient": "._model",
    "PauseSettings": "._pause",
    "AttemptResult": "._result",
    "AttemptScore": "._result",
    "BudgetExceeded": "._halt",
    "Cancelled": "._halt",
    "CheckBroken": "._halt",
    "Completed": "._halt",
    "HaltReason": "._halt",
    "ModelFailed": "._halt",
    "RejectionLimit": "._halt",
    "RunResult": "._result",
    "SensorTripped": "._halt",
    "SessionTranscript": "._result",
    "Spent": "._result",
    "ToolServerFailed": "._halt",
    "UsageLimitReached": "._halt",
    "SessionStateSnapshot": "._state",
    "ToolArgumentError": "._tools._arguments",
    "Tool": "._tools._base",
    "ToolContext": "._tools._base",
    "ToolResult": "._tools._base",
    "tool": "._tools._base",
    "WorkspaceEscape": "._fs._workspace",
    "WorkspaceTooDeep": "._fs._workspace",
    "open_in_workspace": "._fs._workspace",
    "resolve_in_workspace": "._fs._workspace",
    "list_files": "._tools._builtin",
    "read_file": "._tools._builtin",
    "workspace_tools": "._tools._registry",
    "write_file": "._tools._builtin",
    "CliAgentClient": "._providers._cli_agent",
    "ModelLadder": "._providers._ladder",
    "Compaction": "._loop._compaction",
    "MCPServer": "._mcp._server",
    "edit_file": "._tools._edit",
    "search_files": "._tools._edit",
    "CursorAgentClient": "._providers._agent_clients",
    "GeminiCliClient": "._providers._agent_clients",
    "OpenCodeClient": "._providers._agent_clients",
    "Notifier": "._sinks._notify",
    "OtelSink": "._sinks._otel",
    "Plan": "._tools._plan",
    "PlanStep": "._tools._plan",
    "update_plan": "._tools._plan",
    "AnthropicClient": "._providers",
    "ModelPrice": "._providers",
    "OpenAIClient": "._providers",
    "PriceTable": "._providers",
    "RetryPolicy": "._providers",
    "model_from_config": "._providers",
    "RecordingModelClient": "._fixtures._recording",
    "run_command_tool": "._tools._shell",
}

# Names that left this namespace for their audience's module; importable from here, with a
# DeprecationWarning, until the next release.
_TESTING = [
    "FakeClock",
    "FixtureAssertionError",
    "ListSink",
    "fixture_from_transcript",
    "write_fixture",
]
_EXTEND = [
    "CONTINUE",
    "ChecksConsumed",
    "Clock",
    "DONE_TOOL",
    "Decision",
    "HistoryView",
    "KnowsPrices",
    "Limit",
    "ModelRequest",
    "ModelResponse",
    "Policy",
    "PolicySession",
    "ProcessResult",
    "ReadsClock",
    "Run",
    "SensorReading",
    "Session",
    "SessionEnd",
    "SessionStore",
    "SingleSession",
    "Strategy",
    "SystemClock",
    "ToolOutcome",
    "ToolSpec",
    "rejection_feedback",
    "render_prompt",
    "run_process",
]
_EVENTS = [
    "ContextCompacted",
    "EventStream",
    "RunPaused",
    "RunResumed",
    "RunTally",
    "SinkFailed",
    "TranscriptReader",
]
_MOVED = {
    **dict.fromkeys(_TESTING, "harness.testing"),
    **dict.fromkeys(_EXTEND, "harness.extend"),
    **dict.fromkeys(_EVENTS, "harness.events"),
}

__getattr__, __dir__ = _lazy_exports(
    __name__,
    globals(),
    _LAZY,
    moved={name: f"{home}.{name}" for name, home in _MOVED.items()},
)


__all__ = [
    "AnthropicClient",
    "AttemptResult",
    "AttemptScore",
    "BudgetExceeded",
    "CancelToken",
    "Cancelled",
    "CheckBroken",
    "CheckFailed",
    "CheckFlaky",
    "CheckPassed",
    "CliAgentClient",
    "Compaction",
    "Completed",
    "ConfigurationError",
    "CursorAgentClient",
    "DEFAULT_SYSTEM_PROMPT",
    "Event",
    "EventSink",
    "FEEDBACK_TAG",
    "FeedbackInjected",
    "FixtureError",
    "FixtureExhausted",
    "FixtureUnconsumed",
    "GeminiCliClient",
    "HaltReason",
    "Harness",
    "HarnessError",
    "IterationStarted",
    "JsonlTranscript",
    "MCPServer",
    "Message",
    "ModelClient",
    "ModelError",
    "ModelFailed",
    "ModelLadder",
    "ModelPrice",
    "Notifier",
    "OpenAIClient",
    "OpenCodeClient",
    "OtelSink",
    "PauseSettings",
    "Plan",
    "PlanStep",
    "PriceTable",
    "RecordingModelClient",
    "RejectionLimit",
    "RetryPolicy",
    "Role",
    "RunHalted",
    "RunResult",
    "RunStarted",
    "RunWarning",
    "ScriptedModelClient",
    "SensorRead",
    "SensorTripped",
    "SessionStateSnapshot",
    "SessionTranscript",
    "Spent",
    "StructlogSink",
    "Tool",
    "ToolArgumentError",
    "ToolCall",
    "ToolCalled",
    "ToolContext",
    "ToolResult",
    "ToolServerFailed",
    "ToolServerStarted",
    "TurnFinished",
    "TurnStarted",
    "Usage",
    "UsageLimitReached",
    "VerdictReached",
    "WorkspaceEscape",
    "WorkspaceTooDeep",
    "edit_file",
    "list_files",
    "model_from_config",
    "open_in_workspace",
    "read_file",
    "read_transcript",
    "resolve_in_workspace",
    "run_command_tool",
    "search_files",
    "tool",
    "update_plan",
    "workspace_tools",
    "write_file",
]

# Every other package imports this one first: a checks.py of the user's found before the
# library's `checks` is named here, instead of failing deep inside an import.
_refuse_shadowing()
