"""The ledger: figures across many runs, read back from their transcripts (`harness stats`).

A week of runs leaves transcripts (``harness run --transcript``) and board state folders; each
run's cost is printed once and lost. `read_ledger` folds them into one `Ledger`: how many runs
verified, how many tasks at the first attempt, what a verified task took (attempts,
iterations) and cost (the failed runs' cost included), why the runs that did not verify
stopped, which checks sent claims back, and the flaky tests seen.

What is a task, and an attempt at it:

- a board's state folder (or a board's folder holding ``.board``): each task of the board, its
  attempts numbered as the board numbered them (an attempt its account's usage limit stopped,
  ``paused``, is not an attempt, as the board does not charge it, though its cost counts);
- a plain transcript, or a folder of them (its ``*.jsonl`` files): each run is an attempt (a
  best-of run, each of its attempts up to the winner), and runs of the same task text (the
  ``run.started`` event's ``task``) are attempts at one task, in the order given (files in the
  order named, a folder's files by name).

Every transcript is read with `TranscriptReader` (regular files only, each line checked as its
event); a run cut off mid-write (a crashed run) counts up to its last whole line, as
``unfinished``. A file that cannot be read is skipped with a warning naming it
(`Ledger.skipped`), never a traceback.

Flaky tests: a ``check.*`` or ``verdict.reached`` line with a ``flaky`` list of test names (the
suite check's FLAKY verdict) is counted by name; `flaky_tests` is the one place that reads
them, so a richer record extends it alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from attrs import field, frozen

from harness import FixtureError, HarnessError
from harness.events import Event, TranscriptReader

UNFINISHED = "unfinished"
"""The halt cause of a run whose transcript ends without ``run.halted`` (a crashed run)."""
_DETAIL = ("limit", "cause", "kind", "sensor", "by")
_OUTER = ("run.started", "run.halted")  # an attempt's own: the best-of run's say it all


@frozen
class RunFigures:
    """One run, as its transcript tells it: the task it attempted (`task`), which attempt
    (`attempt`, from 1), whether it verified, why it stopped (`halt`: the halt's type, with
    its limit, cause or kind in brackets), its iterations and turns, its cost (None: unknown),
    the claims each check sent back and the flaky tests it saw."""

    source: str
    task: str
    attempt: int
    verified: bool
    halt: str
    iterations: int
    turns: int
    cost_usd: float | None
    rejections: Mapping[str, int] = field(factory=dict)
    flaky: tuple[str, ...] = ()
    charged: bool = True
    """False for a board attempt its account's pause stopped (``paused``): not an attempt."""
    tries: int = 1
    """The attempts this run stands for: a best-of run's, up to its winner when one verified
    (each attempt's iterations and claims sent back are counted too)."""


@frozen
class Ledger:
    """The figures over `runs` (see the module docstring); `skipped` names the files that
    could not be read, and why."""

    runs: tuple[RunFigures, ...]
    skipped: tuple[str, ...] = ()

    @property
    def verified_runs(self) -> int:
        return sum(run.verified for run in self.runs)

    def tasks(self) -> dict[str, list[RunFigures]]:
        """Each task's charged attempts, in order."""
        tasks: dict[str, list[RunFigures]] = {}
        for run in self.runs:
            attempts = tasks.setdefault(run.task, [])
            if run.charged:
                attempts.append(run)
        return {task: sorted(runs, key=lambda r: r.attempt) for task, runs in tasks.items()}

    def to_json(self) -> dict[str, Any]:
        """The figures as ``harness stats --json`` prints them (docs/cli.md has the schema)."""
        tasks = self.tasks()
        verified: list[list[RunFigures]] = []
        first = 0
        for attempts in tasks.values():
            index = next((i for i, run in enumerate(attempts) if run.verified), None)
            if index is None:
                continue
            verified.append(attempts[: index + 1])
            first += index == 0 and attempts[0].tries == 1
        costs = [run.cost_usd for run in self.runs]
        known = None if None in costs else sum(c for c in costs if c is not None)
        runs = len(self.runs)
        rejections: Counter[str] = Counter()
        flaky: Counter[str] = Counter()
        for run in self.runs:
            rejections.update(run.rejections)
            flaky.update(run.flaky)
        halts = Counter(run.halt for run in self.runs if not run.verified)
        return {
            "runs": runs,
            "verified_runs": self.verified_runs,
            "verified_rate": _rate(self.verified_runs, runs),
            "tasks": len(tasks),
            "verified_tasks": len(verified),
            "first_attempt_rate": _rate(first, len(tasks)),
            "attempts_per_verified_task": _mean([sum(run.tries for run in v) for v in verified]),
            "iterations_per_verified_task": _mean(
                [sum(run.iterations for run in v) for v in verified]
            ),
            "cost_usd": known,
            "runs_with_unknown_cost": costs.count(None),
            "cost_per_verified_task": (
                None if known is None or not verified else known / len(verified)
            ),
            "halt_causes": dict(halts.most_common()),
            "rejections_per_check": dict(rejections.most_common()),
            "flaky_tests": dict(flaky.most_common()),
            "skipped": list(self.skipped),
        }


def _rate(part: int, whole: int) -> float | None:
    return None if whole == 0 else part / whole


def _mean(values: Sequence[int]) -> float | None:
    return None if not values else sum(values) / len(values)


def read_ledger(paths: Iterable[str | Path]) -> Ledger:
    """The ledger over `paths`: transcripts, folders of transcripts, board state folders or
    boards' folders. A path that does not exist raises `FileNotFoundError` naming it; a file
    that cannot be read is skipped (`Ledger.skipped`)."""
    runs: list[RunFigures] = []
    skipped: list[str] = []
    seen: Counter[str] = Counter()  # attempts so far of each task text, for plain transcripts
    for path in map(Path, paths):
        if not path.exists():
            raise FileNotFoundError(2, "no such file or folder", str(path))
        before = (len(runs), len(skipped))
        state = _board_state(path) if path.is_dir() else None
        if state is not None:
            runs.extend(_board_runs(state, skipped))
        else:
            files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
            for file in files:
                for run in _transcript_runs(file, skipped):
                    seen[run.task] += 1
                    runs.append(_numbered(run, seen[run.task]))
        if (len(runs), len(skipped)) == before:
            skipped.append(f"{path}: no run found (no transcript, and no board's board.db)")
    return Ledger(tuple(runs), tuple(skipped))


def _numbered(run: RunFigures, attempt: int) -> RunFigures:
    from attrs import evolve

    return evolve(run, attempt=attempt)


def _board_state(path: Path) -> Path | None:
    for state in (path, path / ".board"):
        if (state / "board.db").is_file():
            return state
    return None


def _board_runs(state: Path, skipped: list[str]) -> list[RunFigures]:
    """A board's attempts, each from its transcript, named by its task and number."""
    from strategies.board import open_store

    try:
        store = open_store(state, read_only=True)
    except (HarnessError, OSError) as exc:
        skipped.append(f"{state}: {exc}")
        return []
    try:
        attempts = store.attempts()
    finally:
        store.close()
    runs: list[RunFigures] = []
    for attempt in attempts:
        if attempt.outcome is None:  # still running (or its board died): not yet a figure
            continue
        transcript = attempt.transcript  # as the board named it, from where it ran
        if not transcript.is_file():  # elsewhere, or the board's folder moved
            transcript = state / "transcripts" / transcript.name
        found = _transcript_runs(transcript, skipped)
        for run in found[-1:]:  # an attempt is one run
            runs.append(
                RunFigures(
                    run.source,
                    f"{state}#{attempt.task}",
                    attempt.number,
                    run.verified,
                    run.halt,
                    run.iterations,
                    run.turns,
                    run.cost_usd,
                    run.rejections,
                    run.flaky,
                    charged=attempt.outcome != "paused",
                    tries=run.tries,
                )
            )
    return runs


def _transcript_runs(path: Path, skipped: list[str]) -> list[RunFigures]:
    """The runs in one transcript (a file may hold several, each from ``run.started``)."""
    reader = TranscriptReader(path, allow_cut_off=True)
    runs: list[RunFigures] = []
    current: _Fold | None = None
    try:
        for line, row in reader.rows():
            # Each line checked as its event (one that is not an object is refused there).
            Event.from_dict(cast("Mapping[str, Any]", row), path=path, line=line)
            if not isinstance(row, dict):
                continue
            name = row.get("event")
            if name == "run.started":
                if current is not None:
                    runs.append(current.figures())
                current = _Fold(str(path), str(row.get("task", "")))
            elif current is not None:
                current.add(name, row)
    except (FixtureError, OSError) as exc:
        skipped.append(str(exc))
        return []
    if current is not None:
        runs.append(current.figures())
    return runs


class _Fold:
    """One run's figures, folded from its transcript's lines."""

    def __init__(self, source: str, task: str) -> None:
        self.source = source
        self.task = task
        self.iterations = 0
        self.turns = 0
        self.cost: float | None = 0.0
        self.halt: str | None = None
        self.verified = False
        self.rejections: Counter[str] = Counter()
        self.flaky: list[str] = []
        self.started = 0  # a best-of run's attempts that started
        self.won: int | None = None

    def add(self, name: object, row: Mapping[str, Any]) -> None:
        if name == "attempt.started":
            self.started += 1
        elif name == "attempt.won":
            self.won = _int(row.get("attempt")) or None
        elif name == "attempt.event":  # a best-of attempt's own event: its work counts
            inner = row.get("inner")
            if isinstance(inner, Mapping) and inner.get("event") not in _OUTER:
                self.add(inner.get("event"), inner)
        elif name == "iteration.started":
            self.iterations += 1
        elif name == "turn.finished":
            self.turns += 1
            self._charge(row.get("response"))
        elif name == "check.failed" and _int(row.get("turn")) > 0:  # a claim sent back
            self.rejections[_check_name(row.get("check"))] += 1
        elif name == "run.halted":
            self.halt = halt_label(row.get("reason"))
            self.verified = row.get("verified") is True
            self.turns = _int(row.get("turns")) or self.turns
            usage = row.get("usage")
            if isinstance(usage, Mapping):
                cost = usage.get("cost_usd")
                self.cost = float(cost) if isinstance(cost, int | float) else None
        if isinstance(name, str) and name.startswith(("check.", "verdict.")):
            self.flaky.extend(flaky_tests(row))

    def _charge(self, response: object) -> None:
        usage = response.get("usage") if isinstance(response, Mapping) else None
        cost = usage.get("cost_usd") if isinstance(usage, Mapping) else None
        if self.cost is None or not isinstance(cost, int | float):
            self.cost = None
            return
        self.cost += float(cost)

    def figures(self) -> RunFigures:
        if self.iterations == 0 and self.turns > 0:
            self.iterations = 1  # a loop run announces no iteration
        return RunFigures(
            self.source,
            self.task,
            1,
            self.verified,
            self.halt or UNFINISHED,
            self.iterations,
            self.turns,
            self.cost,
            dict(self.rejections),
            tuple(self.flaky),
            tries=(self.won if self.verified and self.won else self.started) or 1,
        )


def flaky_tests(row: Mapping[str, Any]) -> list[str]:
    """The flaky tests a check's or a verdict's line names: its ``flaky`` (or ``flaky_tests``)
    list of names, or of objects with a ``name``. The one place the ledger reads them."""
    found = row.get("flaky", row.get("flaky_tests"))
    if not isinstance(found, list):
        return []
    names = []
    for item in found:
        name = item.get("name") if isinstance(item, Mapping) else item
        if isinstance(name, str) and name:
            names.append(name)
    return names


def halt_label(reason: object) -> str:
    """``BudgetExceeded(max_turns)``: the halt's type and its limit, cause or kind."""
    if not isinstance(reason, Mapping):
        return UNFINISHED
    kind = str(reason.get("type", "unknown"))
    for key in _DETAIL:
        value = reason.get(key)
        if isinstance(value, str) and value:
            return f"{kind}({value})"
    return kind


def _check_name(check: object) -> str:
    """A check's description, its first line and at most 80 characters."""
    text = check if isinstance(check, str) and check.strip() else "the completion check"
    line = text.strip().splitlines()[0]
    return line if len(line) <= 80 else line[:79] + "…"


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
