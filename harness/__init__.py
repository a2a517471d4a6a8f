"""The harness: the turn loop, its data types, events and fixtures.

Public names by audience, as trio does it:

- `harness`: what a user of the loop needs (this module);
- `harness.testing`: what test writers need (scripted models, the fake clock, fixtures);
- `harness.extend`: what extenders need (the protocols `checks`, `termination` and `strategies`
  implement, the session and policy types, and the config-table helpers).

Names that moved from here to `harness.testing` or `harness.extend` stay importable from here
for one release, with a `DeprecationWarning` that names their new home.
"""

import typing

from ._arguments import ToolArgumentError
from ._cancel import CancelToken
from ._errors import (
    ConfigurationError,
    FixtureError,
    FixtureExhausted,
    FixtureUnconsumed,
    HarnessError,
    ModelError,
)
from ._events import (
    CheckFailed,
    CheckPassed,
    Event,
    EventSink,
    FeedbackInjected,
    IterationStarted,
    JsonlTranscript,
    RunHalted,
    RunStarted,
    RunWarning,
    SensorRead,
    StructlogSink,
    ToolCalled,
    ToolServerStarted,
    TurnFinished,
    TurnStarted,
    VerdictReached,
    read_transcript,
)
from ._harness import Harness
from ._lazy import lazy_exports as _lazy_exports
from ._messages import FEEDBACK_TAG, Message, Role, ToolCall, Usage
from ._model import ModelClient
from ._pause import PauseSettings
from ._result import (
    BudgetExceeded,
    Cancelled,
    CheckBroken,
    Completed,
    HaltReason,
    ModelFailed,
    RejectionLimit,
    RunResult,
    SensorTripped,
    SessionTranscript,
    ToolServerFailed,
    UsageLimitReached,
)
from ._run import DEFAULT_SYSTEM_PROMPT
from ._scripted import ScriptedModelClient
from ._shadowing import refuse_shadowing as _refuse_shadowing
from ._state import SessionStateSnapshot
from ._tools import Tool, ToolContext, ToolResult, tool

if typing.TYPE_CHECKING:
    from ._agent_clients import CursorAgentClient, GeminiCliClient, OpenCodeClient
    from ._builtin_tools import list_files, read_file, workspace_tools, write_file
    from ._cli_agent import CliAgentClient
    from ._compaction import Compaction
    from ._edit_tools import edit_file, search_files
    from ._mcp import MCPServer
    from ._notify import Notifier
    from ._otel import OtelSink
    from ._plan import Plan, PlanStep, update_plan
    from ._providers import (
        AnthropicClient,
        ModelPrice,
        OpenAIClient,
        PriceTable,
        RetryPolicy,
        model_from_config,
    )
    from ._recording import RecordingModelClient
    from ._shell import run_command_tool
    from ._workspace import (
        WorkspaceEscape,
        WorkspaceTooDeep,
        open_in_workspace,
        resolve_in_workspace,
    )

# Loaded on first use (PEP 562), so a run that needs none of these does not pay to import
# them: a fresh process that runs one turn is one of the bench's targets (bench/run.py, W3).
_LAZY = {
    "WorkspaceEscape": "._workspace",
    "WorkspaceTooDeep": "._workspace",
    "open_in_workspace": "._workspace",
    "resolve_in_workspace": "._workspace",
    "list_files": "._builtin_tools",
    "read_file": "._builtin_tools",
    "workspace_tools": "._builtin_tools",
    "write_file": "._builtin_tools",
    "CliAgentClient": "._cli_agent",
    "Compaction": "._compaction",
    "MCPServer": "._mcp",
    "edit_file": "._edit_tools",
    "search_files": "._edit_tools",
    "CursorAgentClient": "._agent_clients",
    "GeminiCliClient": "._agent_clients",
    "OpenCodeClient": "._agent_clients",
    "Notifier": "._notify",
    "OtelSink": "._otel",
    "Plan": "._plan",
    "PlanStep": "._plan",
    "update_plan": "._plan",
    "AnthropicClient": "._providers",
    "ModelPrice": "._providers",
    "OpenAIClient": "._providers",
    "PriceTable": "._providers",
    "RetryPolicy": "._providers",
    "model_from_config": "._providers",
    "RecordingModelClient": "._recording",
    "run_command_tool": "._shell",
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
    "ContextCompacted",
    "DONE_TOOL",
    "Decision",
    "EventStream",
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
    "RunPaused",
    "RunResumed",
    "RunTally",
    "SensorReading",
    "Session",
    "SessionEnd",
    "SessionStore",
    "SingleSession",
    "SinkFailed",
    "Strategy",
    "SystemClock",
    "ToolOutcome",
    "ToolSpec",
    "TranscriptReader",
    "rejection_feedback",
    "render_prompt",
    "run_process",
]
_MOVED = {
    **dict.fromkeys(_TESTING, "harness.testing"),
    **dict.fromkeys(_EXTEND, "harness.extend"),
}

__getattr__, __dir__ = _lazy_exports(
    __name__,
    globals(),
    _LAZY,
    moved={name: f"{home}.{name}" for name, home in _MOVED.items()},
)


__all__ = [
    "AnthropicClient",
    "BudgetExceeded",
    "CancelToken",
    "Cancelled",
    "CheckBroken",
    "CheckFailed",
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
