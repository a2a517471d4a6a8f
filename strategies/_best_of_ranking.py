"""How ``pick = "best_verified"`` orders the verified attempts of a best-of run.

Each verified attempt is scored (`harness.AttemptScore`): the lines it added and removed and
the files it changed, the changed files the task does not name, the test and protected files
it changed, and what it cost. A `Ranking` orders the scores, best first; the first wins. The
default, `SmallestChange`, prefers in turn: no test or protected file changed, the fewest
files outside what the task names, the fewest changed lines, the fewest changed files, the
cheapest (cost, then tokens), the earliest attempt.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable

import anyio.to_thread
from attrs import frozen

from harness import AttemptScore, ConfigurationError, Usage
from harness.extend import ProtectedPaths

from ._attempt_workspaces import Change

MAX_DIFF_BYTES = 1_000_000
"""A file larger than this (or not text) is compared whole: one changed line a side."""

_TEST_FOLDERS = frozenset({"test", "tests", "__tests__", "spec", "specs", "testing"})
_TEST_NAME = re.compile(
    r"^(test_.*\.py|.*_test\.(py|go|rb|exs?)|conftest\.py|.*\.(test|spec)\.[a-z]+|.*Test\.java)$"
)


@frozen
class FileChange:
    """A file an attempt changed: `added` and `removed` lines, or `deleted`."""

    path: str
    added: int
    removed: int
    deleted: bool = False

    @property
    def lines(self) -> int:
        return self.added + self.removed

    def describe(self) -> str:
        if self.deleted:
            return f"{self.path} (deleted)"
        return f"{self.path} (+{self.added} -{self.removed})"


@runtime_checkable
class Ranking(Protocol):
    """Orders the scores of the verified attempts, best first: `rank` returns every score
    it is given, each once (anything else is a `ConfigurationError`); `name` is recorded in
    ``attempt.ranked``."""

    @property
    def name(self) -> str: ...

    def rank(self, scores: Sequence[AttemptScore]) -> Sequence[AttemptScore]: ...


@frozen
class SmallestChange:
    """The default ranking: no test or protected file changed, then the fewest changed files
    the task does not name, the fewest changed lines, the fewest files, the cheapest, the
    earliest."""

    name: str = "smallest_change"

    def rank(self, scores: Sequence[AttemptScore]) -> Sequence[AttemptScore]:
        return sorted(scores, key=smallest_change_key)


def smallest_change_key(score: AttemptScore) -> tuple[int, int, int, int, float, int, int]:
    """`SmallestChange`'s order as a sort key (lower is better)."""
    return (
        1 if score.guarded else 0,
        len(score.outside),
        score.lines,
        score.files,
        score.cost_usd if score.cost_usd is not None else 0.0,
        score.tokens,
        score.attempt,
    )


def ranked(ranking: Ranking, scores: Sequence[AttemptScore]) -> tuple[AttemptScore, ...]:
    """`ranking`'s order of `scores`; a ranking that drops, repeats or invents a score is a
    `ConfigurationError` naming it."""
    order = tuple(ranking.rank(scores))
    if sorted(s.attempt for s in order) != sorted(s.attempt for s in scores) or any(
        s not in scores for s in order
    ):
        raise ConfigurationError(
            f"ranking {ranking.name!r} must return every score it was given, each once "
            f"(got attempts {[s.attempt for s in order]} for {[s.attempt for s in scores]})"
        )
    return order


def is_test_path(path: str) -> bool:
    """True for a file a test suite is made of: under a ``test``/``tests``/``spec`` folder,
    or named like a test (``test_x.py``, ``x_test.go``, ``x.test.ts``, ``conftest.py``...)."""
    parts = PurePosixPath(path).parts
    return any(part in _TEST_FOLDERS for part in parts[:-1]) or bool(_TEST_NAME.match(parts[-1]))


def named_in(task: str, path: str) -> bool:
    """True when `task` names `path`: its whole path, or its file name as a word."""
    return any(
        re.search(rf"(?<![\w./-]){re.escape(word)}(?![\w/-])", task) is not None
        for word in (path, PurePosixPath(path).name)
    )


async def measure(
    changes: Sequence[Change], *, before: Path, after: Path
) -> tuple[FileChange, ...]:
    """The lines each of `changes` added and removed, turning files under `before` into
    those under `after`."""
    return await anyio.to_thread.run_sync(_measure, changes, before, after)


def score(
    attempt: int,
    files: Sequence[FileChange],
    *,
    task: str,
    protected: ProtectedPaths | None,
    usage: Usage,
) -> AttemptScore:
    """Score attempt `attempt`, which changed `files`. `protected` is the run's
    `ProtectedPaths` (or None); a path it has a rule for counts as guarded, as does a test
    file."""
    paths = [f.path for f in files]
    guarded = tuple(
        p
        for p in paths
        if is_test_path(p) or (protected is not None and protected.rule_for(p) is not None)
    )
    return AttemptScore(
        attempt=attempt,
        lines=sum(f.lines for f in files),
        files=len(paths),
        outside=tuple(p for p in paths if not named_in(task, p)),
        guarded=guarded,
        cost_usd=usage.cost_usd,
        tokens=usage.input_tokens + usage.output_tokens,
    )


def _measure(changes: Sequence[Change], before: Path, after: Path) -> tuple[FileChange, ...]:
    found = []
    for change in changes:
        old = _read(before / change.path)
        new = [] if change.deleted else _read(after / change.path)
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        same = sum(block.size for block in matcher.get_matching_blocks())
        found.append(FileChange(change.path, len(new) - same, len(old) - same, change.deleted))
    return tuple(found)


def _read(path: Path) -> list[str]:
    """The lines of `path` (none when it is absent); a binary or very large file is one line,
    its size and content hash standing for it."""
    try:
        if path.is_symlink():
            return [f"-> {path.readlink()}"]
        if not path.is_file():
            return []
        data = path.read_bytes()
    except OSError:
        return []
    if len(data) <= MAX_DIFF_BYTES:
        try:
            return data.decode("utf-8").splitlines()
        except UnicodeDecodeError:
            pass
    return [f"<{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}>"]
