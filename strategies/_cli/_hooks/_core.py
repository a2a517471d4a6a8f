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
) -> StopDecision:
    """Decide one stop: run the spec's checks on the workspace and block or allow.

    The workspace is `workspace`, else the payload's folder, else the spec's own.
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
    saved = await _checkpoint(spec, folder, stop, blocks, checked.verdicts)
    late = "; ".join(note for note in (late, saved) if note) or None
    lines = [
        f"The completion checks do not pass yet (stop blocked {blocks} of at most "
        f"{max_blocks} times in a row):"
    ]
    for verdict in failed:
        lines.append(f"- {verdict.description}")
        lines.extend(f"  {line}" for line in (verdict.reason or "").splitlines())
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
