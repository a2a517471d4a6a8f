"""The harness: the turn loop, its data types, events, fixtures, and the protocols the
`checks`, `termination` and `strategies` packages implement."""

import typing

from ._arguments import ToolArgumentError
from ._cancel import CancelToken
from ._clock import Clock, FakeClock, FastForwardClock, SystemClock
from ._errors import (
    ConfigurationError,
    FixtureAssertionError,
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
    ListSink,
    RunHalted,
    RunStarted,
    SensorRead,
    SinkFailed,
    StructlogSink,
    ToolCalled,
    TurnFinished,
    TurnStarted,
    VerdictReached,
    read_transcript,
)
from ._harness import Harness
from ._lazy import lazy_exports as _lazy_exports
from ._messages import (
    FEEDBACK_TAG,
    Message,
    ModelRequest,
    ModelResponse,
    Role,
    ToolCall,
    ToolSpec,
    Usage,
)
from ._model import ChecksConsumed, KnowsPrices, ModelClient, ReadsClock
from ._policy import CONTINUE, Decision, Limit, Policy, PolicySession, SensorReading
from ._result import (
    BudgetExceeded,
    Cancelled,
    Completed,
    HaltReason,
    ModelFailed,
    RejectionLimit,
    RunResult,
    SensorTripped,
    SessionTranscript,
)
from ._run import DEFAULT_SYSTEM_PROMPT, Run, SingleSession, Strategy
from ._scripted import ScriptedModelClient, fixture_from_transcript, write_fixture
from ._session import DONE_TOOL, Session, SessionEnd, rejection_feedback
from ._state import HistoryView, SessionStateSnapshot, SessionStore, ToolOutcome
from ._streaming import EventStream
from ._tools import Tool, ToolContext, ToolResult, tool
from ._workspace import WorkspaceEscape, open_in_workspace, resolve_in_workspace

if typing.TYPE_CHECKING:
    from ._builtin_tools import list_files, read_file, workspace_tools, write_file
    from ._cli_agent import CliAgentClient, render_prompt
    from ._otel import OtelSink
    from ._plan import Plan, PlanStep, update_plan
    from ._process import ProcessResult, run_process
    from ._providers import (
        AnthropicClient,
        ModelPrice,
        OpenAIClient,
        PriceTable,
        RetryPolicy,
        model_from_config,
    )
    from ._recording import RecordingModelClient

# Loaded on first use (PEP 562), so a run that needs none of these does not pay to import
# them: a fresh process that runs one turn is one of the bench's targets (bench/run.py, W3).
_LAZY = {
    "list_files": "._builtin_tools",
    "read_file": "._builtin_tools",
    "workspace_tools": "._builtin_tools",
    "write_file": "._builtin_tools",
    "CliAgentClient": "._cli_agent",
    "render_prompt": "._cli_agent",
    "OtelSink": "._otel",
    "Plan": "._plan",
    "PlanStep": "._plan",
    "update_plan": "._plan",
    "ProcessResult": "._process",
    "run_process": "._process",
    "AnthropicClient": "._providers",
    "ModelPrice": "._providers",
    "OpenAIClient": "._providers",
    "PriceTable": "._providers",
    "RetryPolicy": "._providers",
    "model_from_config": "._providers",
    "RecordingModelClient": "._recording",
}


__getattr__, __dir__ = _lazy_exports(__name__, globals(), _LAZY)


__all__ = [
    "AnthropicClient",
    "BudgetExceeded",
    "CONTINUE",
    "CancelToken",
    "Cancelled",
    "CheckFailed",
    "CheckPassed",
    "ChecksConsumed",
    "CliAgentClient",
    "Clock",
    "Completed",
    "ConfigurationError",
    "DEFAULT_SYSTEM_PROMPT",
    "DONE_TOOL",
    "Decision",
    "Event",
    "EventSink",
    "EventStream",
    "FEEDBACK_TAG",
    "FakeClock",
    "FastForwardClock",
    "FeedbackInjected",
    "FixtureAssertionError",
    "FixtureError",
    "FixtureExhausted",
    "FixtureUnconsumed",
    "HaltReason",
    "Harness",
    "HarnessError",
    "HistoryView",
    "IterationStarted",
    "JsonlTranscript",
    "KnowsPrices",
    "Limit",
    "ListSink",
    "Message",
    "ModelClient",
    "ModelError",
    "ModelFailed",
    "ModelPrice",
    "ModelRequest",
    "ModelResponse",
    "OpenAIClient",
    "OtelSink",
    "Plan",
    "PlanStep",
    "Policy",
    "PolicySession",
    "PriceTable",
    "ProcessResult",
    "ReadsClock",
    "RecordingModelClient",
    "RejectionLimit",
    "RetryPolicy",
    "Role",
    "Run",
    "RunHalted",
    "RunResult",
    "RunStarted",
    "ScriptedModelClient",
    "SensorRead",
    "SensorReading",
    "SensorTripped",
    "Session",
    "SessionEnd",
    "SessionStateSnapshot",
    "SessionStore",
    "SessionTranscript",
    "SingleSession",
    "SinkFailed",
    "Strategy",
    "StructlogSink",
    "SystemClock",
    "Tool",
    "ToolArgumentError",
    "ToolCall",
    "ToolCalled",
    "ToolContext",
    "ToolOutcome",
    "ToolResult",
    "ToolSpec",
    "TurnFinished",
    "TurnStarted",
    "Usage",
    "VerdictReached",
    "WorkspaceEscape",
    "fixture_from_transcript",
    "list_files",
    "model_from_config",
    "open_in_workspace",
    "read_file",
    "read_transcript",
    "rejection_feedback",
    "render_prompt",
    "resolve_in_workspace",
    "run_process",
    "tool",
    "update_plan",
    "workspace_tools",
    "write_file",
    "write_fixture",
]
