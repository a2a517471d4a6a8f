"""`harness hook claude-stop --spec SPEC.toml`: a coding agent's Stop hook that runs the spec's
checks on the workspace and blocks the stop, with the reason, until they pass.

The agent (Claude Code, or anything that speaks its hook protocol) pipes a JSON payload to
stdin: ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` (``"Stop"`` or
``"SubagentStop"``) and ``stop_hook_active``, which is true when the agent is already going
on because a Stop hook blocked it. The agent's final answer is ``last_assistant_message``, or
the last answer in its transcript: ``transcript_path`` for a Stop, ``agent_transcript_path``
(the subagent's own) for a SubagentStop. The answer is ``{"decision": "block", "reason":
...}`` on stdout, or nothing (exit 0) to let it stop.

It can never wedge a session:

- Blocks are counted per session in a small state file. After ``--max-blocks`` blocks in a row
  the stop is allowed (with a note on stderr) and the count starts again, so every chain of
  blocks ends; a pass also resets the count.
- ``stop_hook_active`` is the agent's re-entry flag. With ``--reentry check`` (the default)
  the checks run again on re-entry, because the agent did more work since the last block,
  and the cap bounds the chain. With ``--reentry allow`` a re-entered stop is always allowed:
  at most one block per chain.
- A payload, spec or transcript that cannot be read is reported on stderr with exit code 1,
  which the agent treats as a non-blocking error: a broken setup never traps the agent. A
  check that fails or times out counts as "not done" (fail closed), within the cap.
- The checks together get ``--timeout`` seconds (`DEFAULT_TIME_LIMIT`), less than the time
  after which the agent kills the hook, so the hook always answers.
- SIGTERM or SIGINT stops the checks (their processes killed) and exits 128 + the signal
  (143, 130): a non-blocking error, so the agent may stop, and the block count is unchanged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Literal

import anyio
from attrs import frozen

from harness import ConfigurationError
from harness.extend import Clock, check_positive

from .._spec import Spec, load_spec
from ._checking import run_checks
from ._claude_transcript import TranscriptError, last_answer
from ._signals import SignalCancel

Reentry = Literal["check", "allow"]
DEFAULT_MAX_BLOCKS = 5
EVENTS = ("Stop", "SubagentStop")
# The payload field naming the transcript of the agent that is stopping: a subagent's own
# answer is in its own transcript, while its `transcript_path` is the main session's.
TRANSCRIPT_FIELD = {"Stop": "transcript_path", "SubagentStop": "agent_transcript_path"}
# The hook's own deadline for all its checks: below the 60 s that Claude Code gave a command
# hook by default before it raised that to 600 s, with a margin for starting and answering.
DEFAULT_TIME_LIMIT = 50.0
EXIT_OK = 0
EXIT_BROKEN = 1  # a non-blocking error for the agent: it may stop
EXIT_ARGPARSE = 2  # argparse's exit code for a bad command line, which would block the stop


class HookPayloadError(ValueError):
    """The hook's stdin is not a Stop-hook payload."""


@frozen
class StopDecision:
    """What the hook decided: block (with the reason the agent reads) or allow.

    `note` is for the person watching (stderr), never for the agent.
    """

    block: bool
    reason: str | None = None
    note: str | None = None
    blocks: int = 0

    def answer(self) -> dict[str, Any] | None:
        """The JSON to print: a block decision, or None to allow the stop."""
        if not self.block:
            return None
        return {"decision": "block", "reason": self.reason}


@frozen
class StopPayload:
    """The fields of a Stop-hook payload the bridge reads."""

    session_id: str
    cwd: Path | None
    event: str
    reentry: bool
    transcript_path: Path | None
    last_message: str | None

    @classmethod
    def from_json(cls, data: object) -> StopPayload:
        if not isinstance(data, dict):
            raise HookPayloadError(f"the payload must be a JSON object (got {type(data).__name__})")
        session = data.get("session_id")
        if not isinstance(session, str) or not session:
            raise HookPayloadError(f"'session_id' must be a non-empty string (got {session!r})")
        event = data.get("hook_event_name", "Stop")
        if event not in EVENTS:
            raise HookPayloadError(f"'hook_event_name' must be one of {EVENTS} (got {event!r})")
        active = data.get("stop_hook_active", False)
        if not isinstance(active, bool):
            raise HookPayloadError(f"'stop_hook_active' must be true or false (got {active!r})")
        last = data.get("last_assistant_message")
        return cls(
            session_id=session,
            cwd=_path(data, "cwd"),
            event=event,
            reentry=active,
            transcript_path=_path(data, TRANSCRIPT_FIELD[event]),
            last_message=last if isinstance(last, str) else None,
        )


def _path(data: dict[str, Any], key: str) -> Path | None:
    """The payload's path `key` with ``~`` expanded; None if it is missing or empty."""
    value = data.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise HookPayloadError(f"{key!r} must be a path (got {value!r})")
    return Path(value).expanduser()


async def claude_stop(
    payload: object,
    spec: Spec,
    *,
    state_dir: Path,
    max_blocks: int = DEFAULT_MAX_BLOCKS,
    reentry: Reentry = "check",
    workspace: Path | None = None,
    time_limit: float = DEFAULT_TIME_LIMIT,
    clock: Clock | None = None,
) -> StopDecision:
    """Decide one stop: run the spec's checks on the workspace and block or allow.

    The workspace is `workspace`, else the payload's ``cwd``, else the spec's own. The checks
    together get `time_limit` seconds (on `clock`); a check still running then, and any not
    yet started, count as not done.
    """
    check_positive("max_blocks", max_blocks, integer=True)
    check_positive("time_limit", time_limit)
    stop = StopPayload.from_json(payload)
    state = _State(state_dir, stop.session_id)
    if stop.reentry and reentry == "allow":
        state.save(0)
        return StopDecision(False, note="re-entered stop allowed (--reentry allow)")
    folder = workspace or stop.cwd or spec.workspace
    if folder is None or not folder.is_dir():
        raise ConfigurationError(f"the workspace {str(folder)!r} is not an existing folder")
    checked = await run_checks(
        spec, folder, final_text=_final_text(stop), time_limit=time_limit, clock=clock
    )
    verdicts = checked.verdicts
    failed = [v for v in verdicts if not v.passed]
    late = (
        f"the checks were cut off by the hook's {time_limit:g}s deadline (--timeout): raise it "
        "together with the hook's \"timeout\" in the agent's settings"
        if checked.timed_out
        else None
    )
    if not failed:
        state.save(0)
        return StopDecision(False, note="the completion checks pass")
    blocks = state.load()
    if blocks >= max_blocks:
        state.save(0)
        return StopDecision(
            False,
            note=(
                f"stop allowed although {len(failed)} check(s) fail: this session was already "
                f"blocked {blocks} time(s) in a row (--max-blocks {max_blocks})"
                + (f"; {late}" if late else "")
            ),
            blocks=blocks,
        )
    blocks += 1
    state.save(blocks)
    lines = [
        f"The completion checks do not pass yet (stop blocked {blocks} of at most "
        f"{max_blocks} times in a row):"
    ]
    for verdict in failed:
        lines.append(f"- {verdict.description}")
        lines.extend(f"  {line}" for line in (verdict.reason or "").splitlines())
    lines.append("Keep working on what is missing, then stop again.")
    return StopDecision(True, reason="\n".join(lines), note=late, blocks=blocks)


def _final_text(stop: StopPayload) -> str | None:
    """The agent's last answer: from the payload, else the last one in its transcript."""
    if stop.last_message is not None:
        return stop.last_message
    if stop.transcript_path is None:
        return None
    try:
        return last_answer(stop.transcript_path)
    except TranscriptError as exc:
        raise HookPayloadError(f"{TRANSCRIPT_FIELD[stop.event]}: {exc}") from None


class _State:
    """The per-session count of blocks in a row, in a small JSON file."""

    def __init__(self, folder: Path, session_id: str) -> None:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:80]
        digest = hashlib.sha256(session_id.encode()).hexdigest()[:12]
        self.path = folder / f"{safe}-{digest}.json"

    def load(self) -> int:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return 0
        blocks = data.get("blocks") if isinstance(data, dict) else None
        return blocks if isinstance(blocks, int) and blocks >= 0 else 0

    def save(self, blocks: int) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"blocks": blocks}), encoding="utf-8")
        os.replace(temporary, self.path)


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/harness/stop-hook``, else ``~/.local/state/harness/stop-hook``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "harness" / "stop-hook"


def register(sub: Any) -> None:
    hook = sub.add_parser("hook", help="bridges for coding agents' hooks")
    kinds = hook.add_subparsers(dest="hook", required=True, metavar="HOOK")
    stop = kinds.add_parser(
        "claude-stop",
        help="a Stop hook: block the agent's stop until the spec's checks pass",
        description="Reads a Stop-hook payload on stdin; prints a block decision or nothing.",
    )
    stop.add_argument("--spec", type=Path, required=True, help="the spec whose checks to run")
    stop.add_argument("--workspace", type=Path, help="check this folder (default: payload cwd)")
    stop.add_argument(
        "--max-blocks",
        type=int,
        default=DEFAULT_MAX_BLOCKS,
        help=f"blocks in a row before a stop is allowed anyway (default {DEFAULT_MAX_BLOCKS})",
    )
    stop.add_argument(
        "--reentry",
        choices=["check", "allow"],
        default="check",
        help="when stop_hook_active is true: check again (default) or always allow",
    )
    stop.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIME_LIMIT,
        help=(
            f"seconds all checks may take together (default {DEFAULT_TIME_LIMIT:g}); keep it below "
            "the hook's \"timeout\" in the agent's settings"
        ),
    )
    stop.add_argument("--state-dir", type=Path, help="where block counts are kept")
    stop.set_defaults(handler=handle_claude_stop)


def handle_claude_stop(args: argparse.Namespace) -> int:
    try:
        payload = json.loads(sys.stdin.read() or "null")
    except ValueError as exc:
        print(f"harness hook: the payload on stdin is not JSON: {exc}", file=sys.stderr)
        return EXIT_BROKEN
    watch = SignalCancel()
    try:
        spec = load_spec(args.spec, purpose="checks")

        async def decide() -> StopDecision | None:
            return await watch.cancellable(
                lambda: claude_stop(
                    payload,
                    spec,
                    state_dir=args.state_dir or default_state_dir(),
                    max_blocks=args.max_blocks,
                    reentry=args.reentry,
                    workspace=args.workspace,
                    time_limit=args.timeout,
                )
            )

        decision = anyio.run(decide)
    except (ConfigurationError, HookPayloadError, OSError) as exc:
        print(f"harness hook: {exc}", file=sys.stderr)
        return EXIT_BROKEN
    if decision is None:  # a signal stopped the checks
        return watch.report_stop("harness hook", "the checks were stopped and nothing was decided")
    if decision.note is not None:
        print(f"harness hook: {decision.note}", file=sys.stderr)
    answer = decision.answer()
    if answer is not None:
        print(json.dumps(answer))
    return EXIT_OK
