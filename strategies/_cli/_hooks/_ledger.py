"""The stop hooks' record (`VERDICTS` in the state folder): no stop unchecked without a trace.

Every hook invocation that reads a stop writes a "started" line before anything that can fail
or hang (the spec, the checks), and completes it after with the verdict, or with the error that
ended it. A started line that is never completed is an invocation that was killed (the agent
kills its hook at the hook's timeout) or is still running: `read_verdicts` reports it as such,
so `harness hook verdicts`, `harness hook doctor` and the viewer's verdicts page show a stop
that went through unchecked instead of nothing.

Each line is one JSON object appended in one write (``O_APPEND``), so the lines of concurrent
hooks never interleave. A line is a `Verdict` (``outcome`` ``"checked"`` or ``"error"``), or a
start (``"event": "started"``) that a later line with the same ``id`` completes.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from attrs import frozen

from harness import ConfigurationError

from .._terminal import without_escapes
from ._files import UnreadableRecord, read_record_text

# The verdict of every checked stop, one JSON object a line, in the hook's state folder.
VERDICTS = "verdicts.jsonl"
# What ended an invocation: its checks ran ("checked"), an error ended it ("error"), or it
# never completed its record ("killed", or "running" while its process still lives).
OUTCOMES = ("checked", "error", "killed", "running")
# How the error of a hook whose entry point could not start begins: the installed command's
# shell appends that line itself (`_install.guarded`), in the shape of a `Verdict` that ended
# in an error, let through.
NOT_STARTED = "the hook could not start"


@frozen
class Verdict:
    """One stop as recorded: when, whose, in which mode, what failed, what was done.

    `would_block` is what the gate's checks said (any check failed); `blocked` is what the
    hook did (never, in observe mode or past the block cap). `outcome` says whether the checks
    ran; `error` is why not. `root` is the folder the checks judged, `cwd` the folder the agent
    said it was in, when they differ.
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
    outcome: str = "checked"
    error: str | None = None
    root: str | None = None
    cwd: str | None = None
    id: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "at": self.at,
            "id": self.id,
            "agent": self.agent,
            "session_id": self.session_id,
            "subagent": self.subagent,
            "mode": self.mode,
            "outcome": self.outcome,
            "would_block": self.would_block,
            "blocked": self.blocked,
            "blocks": self.blocks,
            "checks": self.checks,
            "failed": [{"check": name, "reason": why} for name, why in self.failed],
            "error": self.error,
            "root": self.root,
            "cwd": self.cwd,
        }

    @classmethod
    def from_json(cls, data: object) -> Verdict:
        """A recorded line read back; `ValueError` naming the field that is not right."""
        if not isinstance(data, dict):
            raise ValueError("a verdict must be a JSON object")
        try:
            failed = tuple((str(f["check"]), str(f["reason"])) for f in data["failed"])
            outcome = _outcome(data.get("outcome", "checked"))
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
                subagent=_optional(data, "subagent"),
                outcome=outcome,
                error=_optional(data, "error"),
                root=_optional(data, "root"),
                cwd=_optional(data, "cwd"),
                id=_optional(data, "id"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"a verdict lacks or mangles {exc}") from None

    def describe(self) -> str:
        """What the hook did, in a few words (the verdicts list's and the page's status)."""
        if self.outcome == "killed":
            return "KILLED unchecked"
        if self.outcome == "running":
            return "running"
        if self.outcome == "error":
            return f"ERROR, blocked ({self.blocks})" if self.blocked else "ERROR, let through"
        if not self.would_block:
            return "pass"
        if self.blocked:
            return f"BLOCKED ({self.blocks})"
        return "would block" if self.mode == "observe" else "allowed at the cap"


def _outcome(value: object) -> str:
    if value not in OUTCOMES:
        raise ValueError(f"'outcome' {value!r}")
    return str(value)


def _optional(data: dict[str, object], key: str) -> str | None:
    value = data.get(key)
    return None if value is None else str(value)


@frozen
class Started:
    """A started invocation's record: its id and what its completion repeats."""

    state_dir: Path
    id: str
    agent: str
    session_id: str
    subagent: str | None
    mode: str
    root: str | None
    cwd: str | None

    def complete(self, verdict: Verdict) -> str | None:
        """Append `verdict` as this invocation's completion; a note when it cannot be written
        (a record never changes the decision)."""
        return _append(self.state_dir, verdict.to_json())

    def error(
        self, why: str, *, blocked: bool = False, blocks: int = 0, outcome: str = "error"
    ) -> str | None:
        """Complete the record with the error that ended the invocation (or, with outcome
        "killed", the signal that stopped it)."""
        return self._complete_with(
            would_block=True,
            blocked=blocked,
            blocks=blocks,
            failed=(),
            checks=0,
            outcome=outcome,
            error=without_escapes(why),
        )

    def verdict(
        self,
        failed: tuple[tuple[str, str], ...],
        checks: int,
        *,
        blocked: bool,
        blocks: int,
    ) -> str | None:
        """Complete the record with the checks' verdict."""
        return self._complete_with(
            would_block=bool(failed), blocked=blocked, blocks=blocks, failed=failed, checks=checks
        )

    def _complete_with(self, **outcome: Any) -> str | None:
        """Complete the record with a `Verdict` of this invocation and `outcome`'s fields."""
        return self.complete(
            Verdict(
                at=time.time(),
                agent=self.agent,
                session_id=self.session_id,
                subagent=self.subagent,
                mode=self.mode,
                root=self.root,
                cwd=self.cwd,
                id=self.id,
                **outcome,
            )
        )


def start(
    state_dir: Path,
    *,
    agent: str,
    session_id: str,
    subagent: str | None = None,
    mode: str = "enforce",
    root: Path | None = None,
    cwd: Path | None = None,
) -> tuple[Started, str | None]:
    """Write the "started" line of an invocation; the record to complete, and a note when the
    line could not be written."""
    started = Started(
        state_dir=state_dir,
        id=os.urandom(8).hex(),  # 16 random hex digits (uuid's module is not needed)
        agent=agent,
        session_id=session_id,
        subagent=subagent,
        mode=mode,
        root=None if root is None else str(root),
        cwd=None if cwd is None or cwd == root else str(cwd),
    )
    line = {
        "event": "started",
        "at": time.time(),
        "id": started.id,
        "pid": os.getpid(),
        "agent": agent,
        "session_id": session_id,
        "subagent": subagent,
        "mode": mode,
        "root": started.root,
        "cwd": started.cwd,
    }
    return started, _append(state_dir, line)


def _append(state_dir: Path, data: dict[str, object]) -> str | None:
    line = (json.dumps(data, ensure_ascii=False) + "\n").encode("utf-8")
    path = state_dir / VERDICTS
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW
        fd = os.open(path, flags, 0o644)
        try:
            if not _regular(fd):
                return f"the verdict could not be recorded: {path} is not a regular file"
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError as exc:
        return f"the verdict could not be recorded in {path}: {exc}"
    return None


def _regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)


def read_verdicts(state_dir: Path) -> list[Verdict]:
    """Every recorded stop in `state_dir`, in the order they started: a started line never
    completed is a `Verdict` with outcome "killed" (or "running" while its process lives). A
    line that cannot be read is an error naming the file and the line."""
    path = state_dir / VERDICTS
    try:
        text = read_record_text(path)
    except UnreadableRecord as exc:
        raise ConfigurationError(f"the stop hooks' record {exc}") from None
    if text is None:
        return []
    found: list[Verdict | dict[str, object]] = []
    pending: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if isinstance(data, dict) and data.get("event") == "started":
                pending[str(data["id"])] = len(found)
                _ = (str(data["agent"]), str(data["session_id"]), float(data["at"]))
                found.append(data)
                continue
            verdict = Verdict.from_json(data)
        except (KeyError, TypeError, ValueError, RecursionError) as exc:
            raise ConfigurationError(f"{path}:{number}: not a recorded verdict: {exc}") from None
        where = pending.pop(verdict.id, None) if verdict.id is not None else None
        if where is None:
            found.append(verdict)
        else:
            found[where] = verdict
    return [v if isinstance(v, Verdict) else _unfinished(v) for v in found]


def _unfinished(start: dict[str, object]) -> Verdict:
    pid = start.get("pid")
    alive = isinstance(pid, int) and _alive(pid)
    return Verdict(
        at=float(str(start["at"])),
        agent=str(start["agent"]),
        session_id=str(start["session_id"]),
        subagent=_optional(start, "subagent"),
        mode=str(start.get("mode", "enforce")),
        would_block=False,
        blocked=False,
        blocks=0,
        failed=(),
        checks=0,
        outcome="running" if alive else "killed",
        error=None
        if alive
        else (
            "the hook never completed its record: it was killed (the agent kills its hook at "
            "the hook's timeout) and the stop went through unchecked"
        ),
        root=_optional(start, "root"),
        cwd=_optional(start, "cwd"),
        id=_optional(start, "id"),
    )


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
