"""The one verify-before-stop decision behind every agent's stop hook.

An agent adapter (`_hook_agents`) turns its agent's payload into a `StopRequest` and the
`StopDecision` back into its agent's answer; everything between is here, the same for every
agent: the spec's checks on the workspace under one deadline, failing closed, and a block
count per session so that no chain of blocks is endless.

- Blocks are counted per agent and session in a small state file. After `max_blocks` blocks
  in a row the stop is allowed (with a note for the person watching) and the count starts
  again; a pass also resets it.
- Re-entry (the agent going on because a hook sent it back) is checked again with
  ``reentry="check"`` (the cap bounds the chain), or always allowed with ``"allow"``.
- The checks together get `time_limit` seconds on the clock; a check cut off, and any not yet
  started, count as not done.
- Every checked stop is recorded, one JSON line in `VERDICTS` in the state folder (`Verdict`):
  what the checks said and what the hook did. With ``observe=True`` the checks run and the
  verdict is recorded, but the stop is never blocked (a team sees what the gate would do
  before it enforces it).
- The block reason holds check output (a test runner's report): its escape sequences are
  removed and other control characters shown as escapes (`_terminal.without_escapes`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from attrs import frozen

from checks import CheckVerdict
from harness import ConfigurationError
from harness.extend import Clock, check_positive

from ..._spec import Spec
from .._checking import run_checks
from .._terminal import without_escapes
from ._args import DEFAULT_MAX_BLOCKS, DEFAULT_TIME_LIMIT
from ._claude_transcript import TranscriptError, last_answer
from ._record import SessionRecord

Reentry = Literal["check", "allow"]


class HookPayloadError(ValueError):
    """The hook's stdin is not the payload its agent documents."""


@frozen
class StopRequest:
    """One agent's stop, in the terms every adapter shares.

    `agent`, `session_id` and `subagent` (one of the session's subagents, None for the main
    session) key the block count. `reentry` is true when the agent is going
    on because a stop hook sent it back. The final answer is `last_message`, else the last
    answer in the Claude Code transcript `transcript_path` (named `transcript_field` in
    errors). `allow` is set when the stop must not be checked at all (Cursor's aborted or
    failed loop), with the note saying why.
    """

    agent: str
    session_id: str
    subagent: str | None = None
    cwd: Path | None = None
    reentry: bool = False
    last_message: str | None = None
    transcript_path: Path | None = None
    transcript_field: str = "transcript_path"
    allow: str | None = None


@frozen
class StopDecision:
    """What the hook decided: block (with the reason the agent reads) or allow.

    `note` is for the person watching (stderr), never for the agent. `blocks` is the count of
    blocks in a row after this decision.
    """

    block: bool
    reason: str | None = None
    note: str | None = None
    blocks: int = 0

    def answer(self) -> dict[str, object] | None:
        """Claude Code's and Codex's answer: a block decision, or None to allow the stop."""
        if not self.block:
            return None
        return {"decision": "block", "reason": self.reason}


async def verify_stop(
    stop: StopRequest,
    spec: Spec,
    *,
    state_dir: Path,
    max_blocks: int = DEFAULT_MAX_BLOCKS,
    reentry: Reentry = "check",
    workspace: Path | None = None,
    time_limit: float = DEFAULT_TIME_LIMIT,
    clock: Clock | None = None,
    observe: bool = False,
) -> StopDecision:
    """Decide one stop: run the spec's checks on the workspace and block or allow.

    The workspace is `workspace`, else the payload's folder, else the spec's own. With
    `observe`, the verdict is recorded and the stop always allowed.
    """
    check_positive("max_blocks", max_blocks, integer=True)
    check_positive("time_limit", time_limit)
    if reentry not in ("check", "allow"):
        raise ConfigurationError(f"'reentry' must be 'check' or 'allow' (got {reentry!r})")
    state = BlockCount(state_dir, stop.agent, stop.session_id, stop.subagent)
    if stop.allow is not None:
        state.save(0)
        return StopDecision(False, note=stop.allow)
    if stop.reentry and reentry == "allow":
        state.save(0)
        return StopDecision(False, note="re-entered stop allowed (--reentry allow)")
    folder = workspace or stop.cwd or spec.workspace
    if folder is None or not folder.is_dir():
        raise ConfigurationError(f"the workspace {str(folder)!r} is not an existing folder")
    checked = await run_checks(
        spec,
        folder,
        final_text=_final_text(stop),
        time_limit=time_limit,
        clock=clock,
        record=state.record(),
    )
    failed = [v for v in checked.verdicts if not v.passed]
    late = (
        f"the checks were cut off by the hook's {time_limit:g}s deadline (--timeout): raise it "
        "together with the hook's \"timeout\" in the agent's settings"
        if checked.timed_out
        else None
    )
    mode = "observe" if observe else "enforce"
    if not failed:
        state.save(0)
        unrecorded = _record(state_dir, stop, mode, checked.verdicts, False, 0)
        return StopDecision(
            False, note=_notes("the completion checks pass", *checked.notes, unrecorded)
        )
    if observe:
        unrecorded = _record(state_dir, stop, mode, checked.verdicts, False, 0)
        return StopDecision(
            False,
            note=_notes(
                f"observe mode: {len(failed)} check(s) fail, so the stop would have been "
                f"blocked; it was allowed and the verdict recorded in {state_dir / VERDICTS}",
                late,
                *checked.notes,
                unrecorded,
            ),
        )
    blocks = state.load()
    if blocks >= max_blocks:
        state.save(0)
        unrecorded = _record(state_dir, stop, mode, checked.verdicts, False, blocks)
        return StopDecision(
            False,
            note=_notes(
                f"stop allowed although {len(failed)} check(s) fail: this session was already "
                f"blocked {blocks} time(s) in a row (--max-blocks {max_blocks})",
                late,
                *checked.notes,
                unrecorded,
            ),
            blocks=blocks,
        )
    blocks += 1
    state.save(blocks)
    unrecorded = _record(state_dir, stop, mode, checked.verdicts, True, blocks)
    saved = await _checkpoint(spec, folder, stop, blocks, checked.verdicts)
    late = _notes(late, *checked.notes, saved, unrecorded)
    lines = [
        f"The completion checks do not pass yet (stop blocked {blocks} of at most "
        f"{max_blocks} times in a row):"
    ]
    for verdict in failed:
        lines.append(f"- {without_escapes(verdict.description)}")
        reason = without_escapes(verdict.reason or "")
        lines.extend(f"  {line}" for line in reason.splitlines())
    lines.append("Keep working on what is missing, then stop again.")
    return StopDecision(True, reason="\n".join(lines), note=late, blocks=blocks)


async def _checkpoint(
    spec: Spec, folder: Path, stop: StopRequest, blocks: int, verdicts: Sequence[CheckVerdict]
) -> str | None:
    """With ``checkpoints = true``, checkpoint the workspace at a blocked stop (a rejected
    claim): a series per agent session. A note for the log; a failure never fails the hook."""
    if spec.checkpoints is None:
        return None
    # The checkpoint machinery loads for a spec that keeps checkpoints, not at every stop.
    from harness.checkpoints import CheckpointError, WorkProgress, open_checkpoints

    key = stop.session_id if stop.agent == "claude" else f"{stop.agent}-{stop.session_id}"
    series = "hook-" + hashlib.sha256(key.encode()).hexdigest()[:16]
    progress = WorkProgress.sum_of([v.progress for v in verdicts])
    try:
        store = await open_checkpoints(
            folder,
            series=series,
            backend=spec.checkpoints.backend,
            state_dir=spec.checkpoints.state_dir,
        )
        try:
            saved = await store.save(f"stop blocked ({blocks})", at=time.time(), progress=progress)
        finally:
            await store.aclose()
    except (CheckpointError, OSError) as exc:
        return f"the workspace could not be checkpointed: {exc}"
    return f"checkpoint {saved.short_id} (series {series})"


def _notes(*notes: str | None) -> str | None:
    return "; ".join(note for note in notes if note) or None


# The verdict of every checked stop, one JSON object a line, in the hook's state folder.
VERDICTS = "verdicts.jsonl"


@frozen
class Verdict:
    """One checked stop as recorded: when, whose, in which mode, what failed, what was done.

    `would_block` is what the gate's checks said (any check failed); `blocked` is what the
    hook did (never, in observe mode or past the block cap).
    """

    at: float
    agent: str
    session_id: str
    mode: str
    would_block: bool
    blocked: bool
    blocks: int
    failed: tuple[tuple[str, str], ...]
    checks: int
    subagent: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "at": self.at,
            "agent": self.agent,
            "session_id": self.session_id,
            "subagent": self.subagent,
            "mode": self.mode,
            "would_block": self.would_block,
            "blocked": self.blocked,
            "blocks": self.blocks,
            "checks": self.checks,
            "failed": [{"check": name, "reason": why} for name, why in self.failed],
        }

    @classmethod
    def from_json(cls, data: object) -> Verdict:
        """A recorded line read back; `ValueError` naming the field that is not right."""
        if not isinstance(data, dict):
            raise ValueError("a verdict must be a JSON object")
        try:
            failed = tuple((str(f["check"]), str(f["reason"])) for f in data["failed"])
            subagent = data.get("subagent")
            return cls(
                at=float(data["at"]),
                agent=str(data["agent"]),
                session_id=str(data["session_id"]),
                mode=str(data["mode"]),
                would_block=bool(data["would_block"]),
                blocked=bool(data["blocked"]),
                blocks=int(data["blocks"]),
                failed=failed,
                checks=int(data["checks"]),
                subagent=None if subagent is None else str(subagent),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"a verdict lacks or mangles {exc}") from None


def _record(
    state_dir: Path,
    stop: StopRequest,
    mode: str,
    verdicts: Sequence[CheckVerdict],
    blocked: bool,
    blocks: int,
) -> str | None:
    """Append the stop's verdict to `VERDICTS` (one write, so lines of concurrent hooks never
    interleave). A record that cannot be written never changes the decision: a note says so."""
    failed = tuple(
        (without_escapes(v.description), without_escapes(v.reason or ""))
        for v in verdicts
        if not v.passed
    )
    verdict = Verdict(
        at=time.time(),
        agent=stop.agent,
        session_id=stop.session_id,
        subagent=stop.subagent,
        mode=mode,
        would_block=bool(failed),
        blocked=blocked,
        blocks=blocks,
        failed=failed,
        checks=len(verdicts),
    )
    line = (json.dumps(verdict.to_json(), ensure_ascii=False) + "\n").encode("utf-8")
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(state_dir / VERDICTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError as exc:
        return f"the verdict could not be recorded in {state_dir / VERDICTS}: {exc}"
    return None


def read_verdicts(state_dir: Path) -> list[Verdict]:
    """Every recorded verdict in `state_dir`, oldest first; a line that cannot be read is an
    error naming the file and the line."""
    path = state_dir / VERDICTS
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    verdicts = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            verdicts.append(Verdict.from_json(json.loads(line)))
        except ValueError as exc:
            raise ConfigurationError(f"{path}:{number}: not a recorded verdict: {exc}") from None
    return verdicts


def _final_text(stop: StopRequest) -> str | None:
    """The agent's last answer: from the payload, else the last one in its transcript."""
    if stop.last_message is not None:
        return stop.last_message
    if stop.transcript_path is None:
        return None
    try:
        return last_answer(stop.transcript_path)
    except TranscriptError as exc:
        raise HookPayloadError(f"{stop.transcript_field}: {exc}") from None


class BlockCount:
    """The per-session count of blocks in a row, in a small JSON file.

    Claude Code's sessions keep the file name they always had; other agents' are prefixed
    with the agent's name, so equal session ids of two agents never share a count. Each
    subagent of a session counts apart from the session and from the other subagents.
    """

    def __init__(
        self, folder: Path, agent: str, session_id: str, subagent: str | None = None
    ) -> None:
        key = session_id if agent == "claude" else f"{agent}-{session_id}"
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", key)[:80]
        unique = key if subagent is None else f"{key}\0{subagent}"
        digest = hashlib.sha256(unique.encode()).hexdigest()[:12]
        self.path = folder / f"{safe}-{digest}.json"

    def record(self) -> SessionRecord:
        """Where the verifier as this session's first stop (or start) found it is kept."""
        return SessionRecord(self.path.with_suffix(".verifier"), f"hook-{self.path.stem}")

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


def session_record(state_dir: Path, session_id: str, agent: str = "claude") -> SessionRecord:
    """The verifier's record for `session_id`, beside its block count in `state_dir`."""
    return BlockCount(state_dir, agent, session_id).record()
