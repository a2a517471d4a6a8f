"""`harness hook claude-start --spec SPEC.toml`: a coding agent's SessionStart hook that records
the verifier before the agent does anything.

Without it, the stop hook records the protected paths and the baselines at a session's first
stop, after the agent has worked. With it, the record is taken when the session starts: the
protected paths as they are (digests and pristine copies) and each ``baseline = true`` test
suite run once, in the stop hook's state folder, where `harness hook claude-stop` finds them.
A session that already has a record (resumed, or compacted) keeps it.

It never gets in the agent's way: it prints nothing on stdout (a SessionStart hook's stdout is
added to the agent's context), reports on stderr, and a payload, spec or workspace it cannot
use is exit code 1, a non-blocking error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import anyio

from harness import ConfigurationError, SessionStateSnapshot
from harness.extend import Clock, SystemClock, check_positive

from ..._spec import Spec, load_spec
from .._signals import SignalCancel
from ._record import SessionRecord

EXIT_OK = 0
EXIT_BROKEN = 1


class StartPayloadError(ValueError):
    """The hook's stdin is not a SessionStart payload."""


async def claude_start(
    payload: object,
    spec: Spec,
    *,
    record: SessionRecord,
    workspace: Path | None = None,
    time_limit: float,
    clock: Clock | None = None,
) -> str:
    """Record the verifier for the session the payload names; what was done, in words."""
    check_positive("time_limit", time_limit)
    if not isinstance(payload, dict):
        raise StartPayloadError("the payload must be a JSON object")
    event = payload.get("hook_event_name", "SessionStart")
    if event != "SessionStart":
        raise StartPayloadError(f"'hook_event_name' must be 'SessionStart' (got {event!r})")
    folder = _workspace(payload.get("cwd"), workspace, spec)
    if _recorded(record):
        return "this session's verifier was recorded before; it is kept"
    clock = clock if clock is not None else SystemClock()
    snapshot = SessionStateSnapshot.standalone(
        folder, task=spec.prompt or "", now=clock.now(), run_id=record.run_id
    )
    with clock.deadline_scope(clock.now() + time_limit) as scope:
        guard = await record.guard(spec, folder)
        await record.baselines(spec, snapshot)
    if scope.cancelled_caught:
        return (
            f"recording did not finish within {time_limit:g}s (--timeout); the stop hook "
            "records what is missing at the first stop"
        )
    protected = "no protected paths" if guard is None else f"{len(guard.files)} protected paths"
    return f"recorded {protected} and the baselines"


def _workspace(cwd: object, workspace: Path | None, spec: Spec) -> Path:
    """The folder to record: `workspace`, else the payload's ``cwd``, else the spec's."""
    folder = workspace or (Path(cwd).expanduser() if isinstance(cwd, str) and cwd else None)
    folder = folder or spec.workspace
    if folder is None or not folder.is_dir():
        raise ConfigurationError(f"the workspace {str(folder)!r} is not an existing folder")
    return folder


def _recorded(record: SessionRecord) -> bool:
    return record.folder.is_dir()


def handle_claude_start(args: argparse.Namespace) -> int:
    from ._core import default_state_dir, session_record  # the stop hook's own layout

    try:
        payload = json.loads(sys.stdin.read() or "null")
    except ValueError as exc:
        print(f"harness hook: the payload on stdin is not JSON: {exc}", file=sys.stderr)
        return EXIT_BROKEN
    watch = SignalCancel()
    try:
        spec = load_spec(args.spec, purpose="checks")
        session = payload.get("session_id") if isinstance(payload, dict) else None
        if not isinstance(session, str) or not session:
            raise StartPayloadError(f"'session_id' must be a non-empty string (got {session!r})")
        record = session_record(args.state_dir or default_state_dir(), session)

        async def start() -> str | None:
            return await watch.cancellable(
                lambda: claude_start(
                    payload,
                    spec,
                    record=record,
                    workspace=args.workspace,
                    time_limit=args.timeout,
                )
            )

        note = anyio.run(start)
    except (ValueError, OSError) as exc:  # a bad payload, spec, workspace or record
        print(f"harness hook: {exc}", file=sys.stderr)
        return EXIT_BROKEN
    if note is None:  # a signal stopped it
        return watch.report_stop("harness hook", "recording was stopped")
    print(f"harness hook: {note}", file=sys.stderr)
    return EXIT_OK
