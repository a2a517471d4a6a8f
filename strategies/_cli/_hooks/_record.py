"""What the stop hook keeps for one agent session between its invocations: the verifier as the
first invocation found it.

A hook has no run around it: each stop is a fresh process. Its "run start" is therefore the
first invocation for a session. Then the spec's protected paths are recorded (a manifest and
the pristine files, `PathGuard.save`) and every `TestSuiteCheck` with ``baseline = true`` runs
its baseline; both are kept in a folder beside the block count. Every later invocation loads
them: the protected paths are compared with the record, and the baselines are handed back to
their checks (`TestSuiteCheck.restore_baseline`) under the session's own run id.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import anyio
from attrs import frozen

from checks import CompletionCheck
from checks.extend import KeepsBaseline
from harness import ConfigurationError, SessionStateSnapshot
from harness.extend import PathGuard

from ..._spec import Spec


@frozen
class SessionRecord:
    """The record's folder for one session, and the run id its checks see."""

    folder: Path
    run_id: str

    async def guard(self, spec: Spec, workspace: Path) -> PathGuard | None:
        """The protected paths as the session's first invocation found them (recorded now
        when this is the first), or None when the spec protects nothing."""
        protected = spec.policy.protected
        if not protected:
            return None
        where = self.folder / "protected"
        try:
            guard = await anyio.to_thread.run_sync(PathGuard.load, where, protected)
        except (ValueError, OSError) as exc:
            raise ConfigurationError(
                f"the hook's record of the protected paths in {where} cannot be used: {exc} "
                "(delete the folder to record them again)"
            ) from None
        if guard is None:
            guard = await anyio.to_thread.run_sync(PathGuard.record, workspace, protected)
            await anyio.to_thread.run_sync(guard.save, where)
        return guard

    async def baselines(self, spec: Spec, snapshot: SessionStateSnapshot) -> None:
        """Give each baseline check its baseline: the stored one, or one taken now (the first
        invocation) and stored."""
        for index, check in enumerate(_suites(spec.checks)):
            from checks.extend import SuiteBaseline  # loads only for a baseline check

            path = self.folder / f"baseline-{index}.json"
            try:
                stored = SuiteBaseline.from_json(json.loads(path.read_text(encoding="utf-8")))
            except FileNotFoundError:
                await check.prepare(snapshot)
                taken = check.baseline_for(self.run_id)
                if taken is not None:
                    _write(path, json.dumps(taken.to_json()))
                continue
            except (ValueError, OSError) as exc:
                raise ConfigurationError(
                    f"the hook's baseline in {path} cannot be used: {exc} (delete it to take "
                    "the baseline again)"
                ) from None
            check.restore_baseline(self.run_id, stored)


def _suites(checks: tuple[CompletionCheck, ...]) -> Iterator[KeepsBaseline]:
    """Every check that takes a baseline, in order, inside compositions too."""
    for check in checks:
        if isinstance(check, KeepsBaseline):
            if check.baseline:
                yield check
        elif isinstance(children := getattr(check, "checks", None), tuple):
            yield from _suites(children)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
