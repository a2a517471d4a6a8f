"""What verifying a claim costs: guarding the verifier, rejecting fast, and a cached baseline.

    python bench/verification.py            # the full sizes (about 6 minutes on 2 cores)
    python bench/verification.py --quick    # small sizes, for a look (figures indicative)
    python bench/verification.py --only S,B --backend trio

G (guarding the verifier; 2,000 protected files of 9 KB each, --quick 200; medians of 5):
  R: recording the protected paths when a run starts (walk, read, digest, keep the bytes).
  C: comparing them at a claim (walk, read, digest), the price every claim pays.
  P: making the pristine copy for a claim that found a change (the whole workspace copied,
     the recorded files laid over it, the copy removed), paid only by claims rejected anyway.
S (a suite of about 30 s, --quick 6 s: 60 pytest tests that sleep, in 6 files; one of them,
  the task's `must_pass` test, failing): a `TestSuiteCheck` with a baseline. The baseline
  is taken once (it also fills the bytecode cache), then the full suite is timed as the
  reference; then per backend, a claim with the test still failing, from claim to
  rejection (target: at most 10% of the full suite), and a claim after the fix, from claim
  to acceptance (target: at most the full suite plus 5%).
B (a board of 20 tasks, --quick 5, on one git repository, `isolation = "worktree"`, all at
  once): every attempt's check takes a baseline of the same suite on the same content;
  the baselines actually run (target: 1, with every task complete), per backend, each
  with an empty cache.
K (the cache's key on a workspace of 100,000 files, --quick 10,000, in 1,000 folders):
  cold (no stat index: every file read) and warm (the index: only stats), for a plain
  folder, a clean git checkout of the same files and that checkout with 20 changes
  (targets, the owner's decision in issue 38: cold at most 2 s for the plain folder and 1 s
  for a checkout; a checkout's warm key at most 2.5x the floor below, the plain folder's
  shown for information; medians of 3); where watchman is installed, the plain folder and
  the changed checkout again, watched by it (warm: at most 50 ms). Beside them, the floor: what
  git takes to compare every file's stat with its index, which any key that looks at each
  file pays (a watched one asks watchman instead).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

import checks._test_suite as test_suite_module
from checks import TestSuiteCheck
from checks._baseline_cache import CACHE_ENV, BaselineCache
from harness import ModelClient, ScriptedModelClient, SessionStateSnapshot
from harness.extend import PathGuard, ProtectedPaths
from strategies.board import Agent, AttemptInfo, Board, BoardSettings, load_tasks

BACKENDS = ("asyncio", "trio")
REJECT_SHARE = 0.10
ACCEPT_SHARE = 1.05
BOARD_BASELINES = 1
COLD_S = 1.0
# The owner's decision (issue 38) on the targets no key that looks at each file could meet: a
# plain folder's cold key at most 2 s; an unwatched warm key (a checkout's, through git's
# index) at most 2.5x `git diff-files` on the same tree, the floor any key that stats each
# file pays; a watched key at most 50 ms.
PLAIN_COLD_S = 2.0
WARM_FLOOR_RATIO = 2.5
WARM_S = 0.050
ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
PYTEST = (sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests")
Row = tuple[str, str, str, str, bool | None]


def _snapshot(root: Path, run_id: str) -> SessionStateSnapshot:
    return SessionStateSnapshot.standalone(
        root,
        task="bench",
        final_text="done",
        run_id=run_id,
        agent="bench",
        iteration=1,
        messages=(),
        turns=1,
        run_turns=1,
    )


@contextmanager
def _cache(folder: Path) -> Iterator[None]:
    """Baselines cached in `folder` (emptied first), never in the user's cache."""
    shutil.rmtree(folder, ignore_errors=True)
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(folder)
    try:
        yield
    finally:
        if before is None:
            del os.environ[CACHE_ENV]
        else:
            os.environ[CACHE_ENV] = before


class _Counted:
    """Counts the baselines `TestSuiteCheck` actually runs (a cached one runs none)."""

    def __init__(self) -> None:
        self.runs = 0
        self._real: Any = test_suite_module.TestSuiteCheck._take_baseline

    def __enter__(self) -> _Counted:
        real, counter = self._real, self

        async def counted(check: Any, state: Any, shown: str) -> Any:
            counter.runs += 1
            return await real(check, state, shown)

        test_suite_module.TestSuiteCheck._take_baseline = counted  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        test_suite_module.TestSuiteCheck._take_baseline = self._real  # type: ignore[method-assign]


# G: guarding the verifier ---------------------------------------------------------------


def _tree(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / "tests" / f"pkg{i // 50}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"test_{i % 50}.py").write_text("assert True\n" * 750)
    (root / "src").mkdir()
    (root / "src" / "code.py").write_text("x = 1\n")


async def _pristine(guard: PathGuard, root: Path) -> None:
    async with guard.pristine(root, guard.changes(root)):
        pass


def guarding(quick: bool) -> list[Row]:
    files = 200 if quick else 2000
    rules = ProtectedPaths(["tests/**"])
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        _tree(root, files)
        record, compare, copy = [], [], []
        for _ in range(5):
            started = time.perf_counter()
            guard = PathGuard.record(root, rules)
            record.append(time.perf_counter() - started)
            started = time.perf_counter()
            assert guard.changes(root) == ()
            compare.append(time.perf_counter() - started)
            victim = root / "tests" / "pkg0" / "test_0.py"
            original = victim.read_text()
            victim.write_text("weakened\n")
            started = time.perf_counter()
            anyio.run(_pristine, guard, root)
            copy.append(time.perf_counter() - started)
            victim.write_text(original)
    what = f"{files} protected files of 9 KB"
    return [
        (f"G {label} ({what})", "", f"{statistics.median(samples) * 1000:.1f} ms", "(info)", None)
        for label, samples in (("R record", record), ("C compare", compare), ("P pristine", copy))
    ]


# S: a suite of about 30 s, one test failing -----------------------------------------------

_SUITE_FILE = """\
import time

from feature import VALUE


{tests}
"""


def _suite(root: Path, seconds: float) -> None:
    """60 tests sleeping `seconds` in all, in 6 files; `test_feature` fails until fixed."""
    (root / "tests").mkdir(parents=True)
    each = seconds / 60
    for f in range(6):
        tests = "\n\n".join(f"def test_{f}_{t}():\n    time.sleep({each!r})" for t in range(10))
        if f == 3:
            tests += "\n\n\ndef test_feature():\n    assert VALUE == 42\n"
        (root / "tests" / f"test_part{f}.py").write_text(_SUITE_FILE.format(tests=tests))
    (root / "feature.py").write_text("VALUE = 0\n")


def suite_costs(quick: bool, backends: tuple[str, ...]) -> list[Row]:
    seconds = 6.0 if quick else 30.0
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as folder, _cache(Path(folder) / "cache"):
        root = Path(folder) / "repo"
        _suite(root, seconds)

        def check() -> TestSuiteCheck:
            return TestSuiteCheck(PYTEST, env=ENV, baseline=True, must_pass=["test_feature"])

        started = time.perf_counter()
        anyio.run(check().prepare, _snapshot(root, "reference"))
        taken = time.perf_counter() - started
        rows.append(("S the baseline, taken once", "", f"{taken:.2f} s", "(info)", None))
        whole = TestSuiteCheck(PYTEST, env=ENV, fast_reject=False)
        started = time.perf_counter()
        anyio.run(whole.check, _snapshot(root, "reference"))
        full = time.perf_counter() - started
        rows.append(("S the full suite (the reference)", "", f"{full:.2f} s", "(info)", None))
        for backend in backends:
            (root / "feature.py").write_text("VALUE = 0\n")
            claimed = check()

            async def claim(
                check: TestSuiteCheck = claimed, run_id: str = backend
            ) -> tuple[float, str | None]:
                state = _snapshot(root, run_id)
                await check.prepare(state)  # cached: the suite does not run
                started = time.perf_counter()
                reason = await check.check(state)
                return time.perf_counter() - started, reason

            reject, reason = anyio.run(claim, backend=backend)
            if reason is None or "still fails" not in reason:
                raise AssertionError(f"not a fast rejection: {reason}")
            rows.append(
                (
                    "S claim to rejection",
                    backend,
                    f"{reject:.2f} s = {reject / full:.1%}",
                    f"<= {REJECT_SHARE:.0%}",
                    reject / full <= REJECT_SHARE,
                )
            )
            (root / "feature.py").write_text("VALUE = 42\n")

            async def accept(
                check: TestSuiteCheck = claimed, run_id: str = backend
            ) -> tuple[float, str | None]:
                started = time.perf_counter()
                reason = await check.check(_snapshot(root, run_id))
                return time.perf_counter() - started, reason

            took, reason = anyio.run(accept, backend=backend)
            if reason is not None:
                raise AssertionError(f"the fixed suite was rejected: {reason}")
            rows.append(
                (
                    "S claim to acceptance",
                    backend,
                    f"{took:.2f} s = {took / full:.1%}",
                    f"<= {ACCEPT_SHARE:.0%}",
                    took / full <= ACCEPT_SHARE,
                )
            )
    return rows


# B: a board of 20 tasks on one repository -------------------------------------------------

_TASK = """\
id = "t{i:02d}"
role = "worker"
body = "Write t{i:02d}.txt."
tools = ["write_file"]

[budget]
max_turns = 6

[[checks]]
type = "test_suite"
command = {command}
baseline = true
env = {{ PYTEST_DISABLE_PLUGIN_AUTOLOAD = "1" }}
"""


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@bench", "-C", str(root), *args],
        check=True,
        capture_output=True,
    )


def _model(info: AttemptInfo) -> ModelClient:
    write = {
        "text": "writing",
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": f"{info.task}.txt", "content": "x"}}
        ],
    }
    return ScriptedModelClient.from_responses([write, {"text": "done"}])


def board_baselines(quick: bool, backends: tuple[str, ...]) -> list[Row]:
    tasks_count = 5 if quick else 20
    rows: list[Row] = []
    for backend in backends:
        with tempfile.TemporaryDirectory() as folder, _cache(Path(folder) / "cache"):
            base = Path(folder)
            repo = base / "repo"
            (repo / "tests").mkdir(parents=True)
            tests = "\n\n".join(f"def test_{i}():\n    pass" for i in range(20))
            (repo / "tests" / "test_some.py").write_text(tests + "\n")
            _git(repo, "init", "-q")
            _git(repo, "add", "-A")
            _git(repo, "commit", "-qm", "a repository")
            (base / "tasks").mkdir()
            command = "[" + ", ".join(f'"{w}"' for w in PYTEST) + "]"
            for i in range(tasks_count):
                (base / "tasks" / f"t{i:02d}.toml").write_text(_TASK.format(i=i, command=command))
            board = Board(
                tasks=load_tasks(base / "tasks"),
                agents=[Agent(role="worker", model=_model)],
                state=base / "state",
                size=tasks_count,
                settings=BoardSettings(workspace=repo, isolation="worktree"),
            )
            with _Counted() as counted:
                started = time.perf_counter()
                result = anyio.run(board.run, backend=backend)
                took = time.perf_counter() - started
            done = result.counts.get("complete", 0)
            for task in result.tasks:
                if task.status != "complete":
                    print(f"  {task.id} {task.status}: {(task.reason or '')[:300]}")
            rows.append(
                (
                    f"B baselines run, {tasks_count} tasks at once",
                    backend,
                    f"{counted.runs} ({done} complete, {took:.0f} s)",
                    f"<= {BOARD_BASELINES}",
                    counted.runs <= BOARD_BASELINES and done == tasks_count,
                )
            )
    return rows


# K: the cache's key on a large workspace ---------------------------------------------------


def _many_files(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / f"d{i // 100:04d}"
        if i % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"f{i % 100}.py").write_text(f"x = {i}\n" * 10)


def _key_times(root: Path, index: Path, cold: Callable[[], None]) -> tuple[float, float]:
    cache = BaselineCache(index)
    inputs = {"command": list(PYTEST)}
    colds, warms = [], []
    for _ in range(3):
        cold()
        started = time.perf_counter()
        first = anyio.run(cache.key, inputs, root)
        colds.append(time.perf_counter() - started)
        started = time.perf_counter()
        again = anyio.run(cache.key, inputs, root)
        warms.append(time.perf_counter() - started)
        if first != again:
            raise AssertionError("the key changed with nothing changed")
    return statistics.median(colds), statistics.median(warms)


WATCHMAN = shutil.which("watchman") is not None


@contextmanager
def _watching(root: Path) -> Iterator[None]:
    """`root` watched by watchman (started if it is not running) for as long as the block
    runs."""
    subprocess.run(["watchman", "watch", str(root)], check=True, capture_output=True)
    try:
        yield
    finally:
        subprocess.run(["watchman", "watch-del", str(root)], check=False, capture_output=True)


def _stat_floor(root: Path) -> float:
    """What git takes to compare every file's stat with its index (``git diff-files``, in C,
    in parallel), median of 3: no key that looks at each file can be cheaper."""
    samples = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(["git", "-C", str(root), "diff-files", "--quiet"], check=False)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def cache_costs(quick: bool) -> list[Row]:
    files = 10_000 if quick else 100_000
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        root = base / "files"
        _many_files(root, files)
        time.sleep(1.2)  # older than the index's one-second margin, as a real workspace is
        index = base / "cache"
        plain = _key_times(root, index, lambda: shutil.rmtree(index, ignore_errors=True))
        watched: list[tuple[str, tuple[float, float]]] = []
        if WATCHMAN:
            with _watching(root):
                times = _key_times(root, index, lambda: shutil.rmtree(index, ignore_errors=True))
            watched.append(("plain folder, watched by watchman", times))
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "many files")
        git_index = root / ".git" / "index"
        saved = git_index.read_bytes()

        def cold_git() -> None:
            git_index.write_bytes(saved)  # git's own stat cache as a fresh checkout has it

        checkout = _key_times(root, index, cold_git)
        floor = _stat_floor(root)  # before the changes: --quiet stops at the first
        for i in range(0, files, files // 10):  # ten files changed, ten added
            place = root / f"d{i // 100:04d}"
            with (place / f"f{i % 100}.py").open("a") as changed:
                changed.write("y = 0\n")
            (place / "added.py").write_text("z = 0\n")
        changes = _key_times(root, index, cold_git)
        if WATCHMAN:

            def cold_watched() -> None:
                cold_git()
                shutil.rmtree(index / "watched", ignore_errors=True)

            with _watching(root):
                watched.append(
                    ("git checkout, 20 changes, watched", _key_times(root, index, cold_watched))
                )
    rows: list[Row] = [
        (
            f"K {files:,} files: git diff-files (the floor)",
            "",
            f"{floor * 1000:.0f} ms",
            "(info)",
            None,
        )
    ]
    if not WATCHMAN:
        rows.append(("K watchman is not installed: no watched rows", "", "", "(info)", None))
    unwatched = (
        ("plain folder", plain),
        ("clean git checkout", checkout),
        ("git checkout, 20 changes", changes),
    )
    for kind, (cold, warm) in (*unwatched, *watched):
        cold_limit = PLAIN_COLD_S if kind.startswith("plain folder") else COLD_S
        rows.append(
            (
                f"K {files:,} files, {kind}: cold",
                "",
                f"{cold * 1000:.0f} ms",
                f"<= {cold_limit:g} s",
                cold <= cold_limit,
            )
        )
        met: bool | None
        if (kind, (cold, warm)) in watched:
            target, met = f"<= {WARM_S * 1000:.0f} ms", warm <= WARM_S
        elif kind == "plain folder":  # a digest in Python with no index to ask: shown only
            target, met = "(info)", None
        else:
            target = f"<= {WARM_FLOOR_RATIO:g}x floor"
            met = warm <= WARM_FLOOR_RATIO * floor
        figure = f"{warm * 1000:.1f} ms ({warm / floor:.1f}x)"
        rows.append((f"K {files:,} files, {kind}: warm", "", figure, target, met))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="G,S,B,K", help="sections, e.g. S,B")
    parser.add_argument("--backend", choices=BACKENDS)
    args = parser.parse_args()
    backends = (args.backend,) if args.backend else BACKENDS
    only = {part.strip().upper() for part in args.only.split(",")}
    sections: list[tuple[str, Callable[[], list[Row]]]] = [
        ("G", lambda: guarding(args.quick)),
        ("S", lambda: suite_costs(args.quick, backends)),
        ("B", lambda: board_baselines(args.quick, backends)),
        ("K", lambda: cache_costs(args.quick)),
    ]
    rows: list[Row] = []
    for name, section in sections:
        if name in only:
            found = section()
            rows += found
            for row in found:
                _print(row)
    missed = [row for row in rows if row[4] is False]
    print(f"\n{len(missed)} target(s) missed" if missed else "\nevery target met")


def _print(row: Row) -> None:
    label, backend, figure, target, met = row
    verdict = "" if met is None else ("met" if met else "MISSED")
    print(f"{label:<56} {backend:<8} {figure:>22} {target:>10} {verdict}", flush=True)


if __name__ == "__main__":
    main()
