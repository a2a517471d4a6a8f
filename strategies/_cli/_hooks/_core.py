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
- Every stop is recorded in `VERDICTS` in the state folder (`_ledger`): started before the
  checks, completed after with what the checks said and what the hook did (`Verdict`). With
  ``observe=True`` the checks run and the verdict is recorded, but the stop is never blocked (a
  team sees what the gate would do before it enforces it).
- The decision itself is `judge`, a pure function of the failed checks and the count; the rest
  of `verify_stop` applies it.
- A stop whose checks cannot run at all (the spec is missing or does not load) is blocked with
  the reason, within the same cap, and recorded as an error (`refuse_unchecked`).
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
from .._checking import Checked, run_checks
from .._terminal import without_escapes
from ._args import DEFAULT_MAX_BLOCKS, DEFAULT_TIME_LIMIT
from ._files import read_json
from ._ledger import VERDICTS, Started, Verdict, read_verdicts
from ._ledger import start as start_record
from ._record import SessionRecord

Reentry = Literal["check", "allow"]
# The start of the reason a stop is blocked with when its checks cannot run at all.
CANNOT_RUN = "The completion checks could not run"

__all__ = [
    "CANNOT_RUN",
    "VERDICTS",
    "BlockCount",
    "HookPayloadError",
    "StopDecision",
    "StopOptions",
    "StopRequest",
    "Verdict",
    "default_state_dir",
    "judge",
    "read_verdicts",
    "refuse_unchecked",
    "session_record",
    "verify_stop",
]


class HookPayloadError(ValueError):
    """The hook's stdin is not the payload its agent documents."""


@frozen
class StopRequest:
    """One agent's stop, in the terms every adapter shares.

    `agent`, `session_id` and `subagent` (one of the session's subagents, None for the main
    session) key the block count. `reentry` is true when the agent is going
    on because a stop hook sent it back. The final answer is `last_message` (each adapter
    finds it its own way: Claude Code's in its transcript). `allow` is set when the stop must
    not be checked at all (Cursor's aborted or failed loop), with the note saying why.
    """

    agent: str
    session_id: str
    subagent: str | None = None
    cwd: Path | None = None
    reentry: bool = False
    last_message: str | None = None
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


@frozen
class StopOptions:
    """How every stop of a hook is decided: the options each agent's stop command shares.

    `state_dir` keeps the block counts and the record; after `max_blocks` blocks in a row a
    stop is allowed; `reentry` says whether a re-entered stop is checked again; the checks run
    on `workspace` (else the project root, else the payload's folder, else the spec's own) and
    together get `time_limit` seconds on `clock`; with `observe` no stop is blocked.
    """

    state_dir: Path
    max_blocks: int = DEFAULT_MAX_BLOCKS
    reentry: Reentry = "check"
    workspace: Path | None = None
    time_limit: float = DEFAULT_TIME_LIMIT
    clock: Clock | None = None
    observe: bool = False

    def __attrs_post_init__(self) -> None:
        check_positive("max_blocks", self.max_blocks, integer=True)
        check_positive("time_limit", self.time_limit)
        if self.reentry not in ("check", "allow"):
            raise ConfigurationError(f"'reentry' must be 'check' or 'allow' (got {self.reentry!r})")

    @property
    def mode(self) -> str:
        return "observe" if self.observe else "enforce"


Action = Literal["pass", "observe", "capped", "block"]


def judge(failed: int, *, blocks: int, max_blocks: int, observe: bool) -> tuple[Action, int]:
    """The decision alone, from how many checks failed and the blocks in a row so far: what to
    do, and the count of blocks in a row after it. No file, no clock, no output."""
    if not failed:
        return "pass", 0
    if observe:
        return "observe", 0
    if blocks >= max_blocks:
        return "capped", 0
    return "block", blocks + 1


async def verify_stop(
    stop: StopRequest,
    spec: Spec,
    options: StopOptions,
    *,
    root: Path | None = None,
    started: Started | None = None,
) -> StopDecision:
    """Decide one stop: run the spec's checks on the project root and block or allow.

    The record of the stop is started before the checks (unless `started` was, by the
    caller) and completed after them with the verdict.
    """
    state = BlockCount(options.state_dir, stop.agent, stop.session_id, stop.subagent)
    if stop.allow is not None:
        state.save(0)
        return StopDecision(False, note=stop.allow)
    if stop.reentry and options.reentry == "allow":
        state.save(0)
        return StopDecision(False, note="re-entered stop allowed (--reentry allow)")
    folder = options.workspace or root or stop.cwd or spec.workspace
    unrecorded = None
    if started is None:
        started, unrecorded = start_record(
            options.state_dir,
            agent=stop.agent,
            session_id=stop.session_id,
            subagent=stop.subagent,
            mode=options.mode,
            root=folder,
            cwd=stop.cwd,
        )
    if folder is None or not folder.is_dir():
        raise ConfigurationError(f"the workspace {str(folder)!r} is not an existing folder")
    checked = await run_checks(
        spec,
        folder,
        final_text=stop.last_message,
        time_limit=options.time_limit,
        clock=options.clock,
        record=state.record(),
    )
    failed = [v for v in checked.verdicts if not v.passed]
    before = state.load()  # read once: `_apply` words the answer from the same count
    action, blocks = judge(
        len(failed), blocks=before, max_blocks=options.max_blocks, observe=options.observe
    )
    if action != "observe":  # observe mode never counts a block
        state.save(blocks)
    return await _apply(
        action, (before, blocks), stop, spec, options, folder, checked, started, unrecorded
    )


async def _apply(
    action: Action,
    counts: tuple[int, int],
    stop: StopRequest,
    spec: Spec,
    options: StopOptions,
    folder: Path,
    checked: Checked,
    started: Started,
    unrecorded: str | None,
) -> StopDecision:
    """Do what `judge` decided (the count kept already: `counts` is the blocks in a row
    before and after it): complete the record, checkpoint a blocked stop, and word the
    answer."""
    before, blocks = counts
    failed = [v for v in checked.verdicts if not v.passed]
    listed = tuple(
        (without_escapes(v.description), without_escapes(v.reason or "")) for v in failed
    )
    unrecorded = (
        started.verdict(
            listed,
            len(checked.verdicts),
            blocked=action == "block",
            blocks=blocks if action == "block" else (before if action == "capped" else 0),
        )
        or unrecorded
    )
    late = (
        f"the checks were cut off by the hook's {options.time_limit:g}s deadline (--timeout): "
        "raise it together with the hook's \"timeout\" in the agent's settings"
        if checked.timed_out
        else None
    )
    where = _where(folder, stop.cwd)
    if action == "pass":
        return StopDecision(
            False, note=_notes("the completion checks pass", where, *checked.notes, unrecorded)
        )
    if action == "observe":
        return StopDecision(
            False,
            note=_notes(
                f"observe mode: {len(failed)} check(s) fail, so the stop would have been "
                f"blocked; it was allowed and the verdict recorded in "
                f"{options.state_dir / VERDICTS}",
                where,
                late,
                *checked.notes,
                unrecorded,
            ),
        )
    if action == "capped":
        return StopDecision(
            False,
            note=_notes(
                f"stop allowed although {len(failed)} check(s) fail: this session was already "
                f"blocked {before} time(s) in a row (--max-blocks {options.max_blocks})",
                where,
                late,
                *checked.notes,
                unrecorded,
            ),
            blocks=before,
        )
    saved = await _checkpoint(spec, folder, stop, blocks, checked.verdicts)
    lines = [
        f"The completion checks do not pass yet (stop blocked {blocks} of at most "
        f"{options.max_blocks} times in a row):"
    ]
    for verdict in failed:
        lines.append(f"- {without_escapes(verdict.description)}")
        reason = without_escapes(verdict.reason or "")
        lines.extend(f"  {line}" for line in reason.splitlines())
    if where is not None:
        lines.append(f"({where}.)")
    lines.append("Keep working on what is missing, then stop again.")
    return StopDecision(
        True,
        reason="\n".join(lines),
        note=_notes(late, *checked.notes, saved, unrecorded),
        blocks=blocks,
    )


def refuse_unchecked(
    stop: StopRequest, why: str, options: StopOptions, started: Started
) -> StopDecision:
    """A stop whose checks cannot run at all (a spec that is missing or does not load): blocked
    with the reason, within the block cap, so the agent tells the person; allowed in observe
    mode or past the cap. Recorded as an error either way. The reason says the spec is the
    person's to fix: the agent is never invited to edit the gate to pass it."""
    state = BlockCount(options.state_dir, stop.agent, stop.session_id, stop.subagent)
    before = state.load()
    action, blocks = judge(1, blocks=before, max_blocks=options.max_blocks, observe=options.observe)
    if action != "observe":
        state.save(blocks)
    clean = without_escapes(why)
    if action != "block":
        unrecorded = started.error(clean, blocks=before if action == "capped" else 0)
        what = (
            "observe mode"
            if action == "observe"
            else (f"already blocked {before} time(s) in a row (--max-blocks {options.max_blocks})")
        )
        return StopDecision(
            False,
            note=_notes(f"the checks could not run ({clean}); stop allowed: {what}", unrecorded),
            blocks=before if action == "capped" else 0,
        )
    unrecorded = started.error(clean, blocked=True, blocks=blocks)
    reason = (
        f"{CANNOT_RUN} (stop blocked {blocks} of at most "
        f"{options.max_blocks} times in a row): {clean}\n"
        "The gate's spec is the person's to fix, not yours: do not create or edit it to pass. "
        "Say in your final answer that the completion checks could not run, and why; then stop "
        "again."
    )
    return StopDecision(True, reason=reason, note=unrecorded, blocks=blocks)


def _where(folder: Path, cwd: Path | None) -> str | None:
    """Which folder was judged, when the agent said it was in another."""
    if cwd is None or cwd.absolute() == folder.absolute():
        return None
    return f"the checks ran on the project root {folder}, not on the agent's folder {cwd}"


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
            data = read_json(self.path, own=True)
        except ValueError:  # not a count the hook wrote: counted again from zero
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
