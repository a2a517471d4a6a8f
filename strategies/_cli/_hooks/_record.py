"""What the stop hook keeps for one agent session between its invocations: the verifier as the
first invocation found it.

A hook has no run around it: each stop is a fresh process. Its "run start" is therefore the
first invocation for a session. Then the spec's protected paths are recorded (a manifest and
the pristine files, `PathGuard.save`) and every `TestSuiteCheck` with ``baseline = true`` runs
its baseline; both are kept in a folder beside the block count. Every later invocation loads
them: the protected paths are compared with the record, and the baselines are handed back to
their checks (`TestSuiteCheck.restore_baseline`) under the session's own run id.

After each stop's checks, what every fast-rejecting `TestSuiteCheck` found at its last whole
run of the suite is kept there too (`TestSuiteCheck.last_verdict_for`), and handed back at the
next stop (`restore_last_verdict`): the tests that failed then run first, so a stop that fixed
nothing is sent back in seconds, as within a run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from attrs import frozen

from checks import CompletionCheck
from checks.extend import KeepsBaseline, KeepsLastVerdict
from harness import ConfigurationError
from harness.extend import get_logger

from ..._spec import Spec
from ._files import UnreadableRecord, read_json

if TYPE_CHECKING:
    from harness import SessionStateSnapshot
    from harness.extend import PathGuard

_log = get_logger("strategies.hook")


@frozen
class SessionRecord:
    """The record's folder for one session, and the run id its checks see."""

    folder: Path
    run_id: str

    async def guard(self, spec: Spec, workspace: Path) -> PathGuard | None:
        """The protected paths as the session's first invocation found them (recorded now
        when this is the first), or None when the spec protects nothing."""
        protected = spec.protected
        if not protected:
            return None
        from harness.extend import PathGuard  # loads for a spec that protects paths

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
                data = read_json(path, own=True)
                if data is not None:
                    check.restore_baseline(self.run_id, SuiteBaseline.from_json(data))
            except (ValueError, OSError) as exc:
                raise ConfigurationError(
                    f"the hook's baseline in {path} cannot be used: {exc} (delete it to take "
                    "the baseline again)"
                ) from None
            if data is None:
                await check.prepare(snapshot)
                taken = check.baseline_for(self.run_id)
                if taken is not None:
                    _write(path, json.dumps(taken.to_json()))

    def restore_last_verdicts(self, spec: Spec) -> tuple[str, ...]:
        """Hand each fast-rejecting suite check what its last whole run found at an earlier
        stop of the session; notes on the stored verdicts not used.

        A stored verdict that cannot be used (unreadable, malformed, another command's) is
        ignored with a warning, not an error as a damaged baseline is: it only decides which
        tests run first, and only the whole suite accepts a claim, so without it the stop
        costs the whole suite and is judged the same."""
        notes: list[str] = []
        for index, check in _fast_suites(spec.checks):
            from checks.extend import LastVerdict  # loads only for a suite check

            path = self.folder / f"last-verdict-{index}.json"
            try:
                data = read_json(path, own=True)
                if data is None:
                    continue
                stored = LastVerdict.from_json(data)
                check.restore_last_verdict(self.run_id, stored)
            except FileNotFoundError:
                continue
            except (ValueError, OSError) as exc:
                why = exc.reason if isinstance(exc, UnreadableRecord) else str(exc)
                _log.warning("hook.last_verdict_ignored", path=str(path), why=why)
                notes.append(
                    f"the last verdict in {path} is not used ({why}): the whole suite runs"
                )
        return tuple(notes)

    def keep_last_verdicts(self, spec: Spec) -> tuple[str, ...]:
        """Store, atomically, what each fast-rejecting suite check's last whole run found, for
        the session's next stop; notes on those that could not be stored."""
        notes: list[str] = []
        for index, check in _fast_suites(spec.checks):
            found = check.last_verdict_for(self.run_id)
            if found is None:
                continue
            path = self.folder / f"last-verdict-{index}.json"
            try:
                _write(path, json.dumps(found.to_json()))
            except OSError as exc:
                _log.warning("hook.last_verdict_not_kept", path=str(path), why=str(exc))
                notes.append(f"the last verdict could not be kept in {path}: {exc}")
        return tuple(notes)


def _suites(checks: tuple[CompletionCheck, ...]) -> Iterator[KeepsBaseline]:
    """Every check that takes a baseline, in order, inside compositions too."""
    for check in checks:
        if isinstance(check, KeepsBaseline):
            if check.baseline:
                yield check
        elif isinstance(children := getattr(check, "checks", None), tuple):
            yield from _suites(children)


def _fast_suites(checks: tuple[CompletionCheck, ...]) -> Iterator[tuple[int, KeepsLastVerdict]]:
    """Every check that keeps a last verdict, numbered in order (inside compositions too),
    with those whose fast half is off left out."""
    for index, check in enumerate(_keeping_last(checks)):
        if check.fast_reject:
            yield index, check


def _keeping_last(checks: tuple[CompletionCheck, ...]) -> Iterator[KeepsLastVerdict]:
    for check in checks:
        if isinstance(check, KeepsLastVerdict):
            yield check
        elif isinstance(children := getattr(check, "checks", None), tuple):
            yield from _keeping_last(children)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
