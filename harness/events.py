"""What consumers of events need: every event kind, the sinks, the live stream, the transcript
reader and the fold of a run's counts.

One vocabulary: each kind is an attrs value with a dotted `name`, written to a transcript as one
JSON line and read back by field name (`Event.from_dict`, `TranscriptReader`). The same classes
are exported where they were before (`harness`, `harness.extend`, `harness.checkpoints`); this
module gathers them for a consumer who reads, forwards or replays events.
"""

from ._events._attempts import (
    AttemptApplied,
    AttemptEvent,
    AttemptFinished,
    AttemptRefused,
    AttemptsRanked,
    AttemptStarted,
    AttemptWon,
    WaveStarted,
)
from ._events._base import Event, UnknownEvent, event_from_dict
from ._events._checkpoint import CheckpointFailed, CheckpointRestored, CheckpointSaved
from ._events._context import ContextCompacted
from ._events._escalation import ModelEscalated
from ._events._pause import RunPaused, RunResumed
from ._events._reader import RunTally, TranscriptReader
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
    SinkFailed,
    ToolServerStarted,
    TurnFinished,
    TurnStarted,
    VerdictReached,
)
from ._events._sinks import EventSink, JsonlTranscript, ListSink, StructlogSink, read_transcript
from ._events._stream import EventStream, stream_events
from ._events._tool import ToolCalled
from ._events._verifier import BaselineRecorded, ProtectedPathsChanged, ProtectedPathsRecorded

__all__ = [
    "AttemptApplied",
    "AttemptEvent",
    "AttemptFinished",
    "AttemptRefused",
    "AttemptStarted",
    "AttemptWon",
    "AttemptsRanked",
    "BaselineRecorded",
    "CheckFailed",
    "CheckFlaky",
    "CheckPassed",
    "CheckpointFailed",
    "CheckpointRestored",
    "CheckpointSaved",
    "ContextCompacted",
    "Event",
    "EventSink",
    "EventStream",
    "FeedbackInjected",
    "IterationStarted",
    "JsonlTranscript",
    "ListSink",
    "ModelEscalated",
    "ProtectedPathsChanged",
    "ProtectedPathsRecorded",
    "RunHalted",
    "RunPaused",
    "RunResumed",
    "RunStarted",
    "RunTally",
    "RunWarning",
    "SensorRead",
    "SinkFailed",
    "StructlogSink",
    "ToolCalled",
    "ToolServerStarted",
    "TranscriptReader",
    "TurnFinished",
    "TurnStarted",
    "UnknownEvent",
    "VerdictReached",
    "WaveStarted",
    "event_from_dict",
    "read_transcript",
    "stream_events",
]
