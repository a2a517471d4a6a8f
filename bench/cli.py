"""Benchmark the `harness` command line's start-up: each command as a fresh process.

    python bench/cli.py                 # 15 interleaved rounds, a 10,000-task board
    python bench/cli.py --rounds 5 --tasks 1000
    git worktree add /tmp/before main && python bench/cli.py --before /tmp/before --instructions

Fresh processes, run interleaved (one of each, then again) so that the machine's load falls on
every row alike; the table shows the median wall time and the median CPU time (user + system,
from the child's resource usage) of each, against two floors:

- ``python -c pass``: the interpreter's own start-up;
- ``python -c "import sqlite3, json, argparse"``: what reading a board's database and printing
  it cannot avoid (the floor of ``board status``);
- ``anyio.run`` of an empty coroutine: the event loop's own start-up, which every command that
  runs a check or a session pays (a stop's checks are coroutines run on anyio).

The commands: ``harness --help``; ``harness board status`` on a board of --tasks tasks (most
complete, some failed, in review and pending: the default table, counts and what needs a
look); ``harness hook claude-stop`` on a Stop payload whose checks pass (what a coding agent
runs at every stop); ``harness check`` on the same spec; ``harness run`` of the scripted demo.
Then the stop hook's wall time over ``python -c pass`` (target: at most 3.5x) and over the
event loop's start-up (for information), and ``board status``'s own time in this process
(target: at most 50 ms). ``node -e 0`` (where Node is
installed) is shown beside them: the start-up of the Node scripts other stop hooks are.

``--before DIR`` adds the stop hook run from another checkout (say, of main before a change)
and from this one, both started the same way, for a before/after pair. Wall time on a shared
machine moves with the load; CPU time less. ``--instructions`` also counts the instructions of
one run of the hook (and of the floors) under callgrind, a figure the load does not move.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATUS_TARGET_MS = 50.0
HOOK_RATIO = 3.5  # the stop hook at most 3.5x `python -c pass` (issue 38)
EVENT_LOOP = "python: anyio.run (the event loop)"
NODE = shutil.which("node")  # the field's stop hooks are Node scripts: `node -e 0` beside ours

HOOK_SPEC = """\
prompt = "Write report.md, then end your answer with a line DONE."

[model]
type = "fixture"
path = "unused.jsonl"

[[checks]]
type = "command"
command = "true"
"""

TASK = """id = "t{i:05d}"
title = "Task {i}"
role = "worker"
body = "Write t{i:05d}.txt."

[[checks]]
type = "files"
paths = ["t{i:05d}.txt"]
"""


def make_board(root: Path, count: int) -> Path:
    """A board of `count` tasks that has run: most complete, some failed, in review, pending."""
    from strategies.board import BoardStore, load_tasks

    folder = root / "board"
    (folder / "tasks").mkdir(parents=True)
    for i in range(count):
        (folder / "tasks" / f"t{i:05d}.toml").write_text(TASK.format(i=i))
    state = folder / ".board"
    state.mkdir()
    with BoardStore(state / "board.db") as store:
        store.start(
            load_tasks(folder / "tasks"),
            owner="bench",
            pid=os.getpid(),
            host="bench",
            engine="local",
            agents=1,
            roles={"worker"},
            max_attempts=3,
        )
        store.end("bench")
    db = sqlite3.connect(state / "board.db")
    with db:
        db.execute("UPDATE tasks SET status = 'complete'")
        db.execute("UPDATE tasks SET status = 'failed', reason = 'tests red' WHERE rowid % 97 = 0")
        db.execute("UPDATE tasks SET status = 'review', reason = 'a look' WHERE rowid % 211 = 0")
        db.execute("UPDATE tasks SET status = 'pending' WHERE rowid % 53 = 0")
    db.close()
    return folder


def make_hook(root: Path) -> tuple[Path, bytes]:
    """A spec whose one check (``command = "true"``) passes, and a Claude Code Stop payload
    for its workspace, a git repository (as the issue measured it)."""
    hook = root / "hook"
    (hook / "workspace").mkdir(parents=True)
    (hook / "workspace" / "report.md").write_text("# Report\n")
    subprocess.run(["git", "init", "-q", str(hook / "workspace")], check=True)
    (hook / "spec.toml").write_text(HOOK_SPEC)
    shutil.copy(ROOT / "fixtures" / "hooks" / "transcript.jsonl", hook / "transcript.jsonl")
    payload = json.loads((ROOT / "fixtures" / "hooks" / "stop.json").read_text())
    payload["cwd"] = str(hook / "workspace")
    payload["transcript_path"] = str(hook / "transcript.jsonl")
    return hook, json.dumps(payload).encode()


def harness_argv() -> list[str]:
    """How a user starts the command: the installed ``harness`` script next to this Python."""
    script = Path(sys.executable).parent / "harness"
    if script.is_file():
        return [sys.executable, str(script)]
    return [sys.executable, "-m", "strategies"]  # pragma: no cover - a bare checkout


# Runs the command line from the checkout given as its first argument. The editable install's
# finder maps the packages to this checkout whatever sys.path says, so it is taken out.
FROM_TREE = """\
import sys
root = sys.argv.pop(1)
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path.insert(0, root)
from strategies._cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def from_tree(root: Path) -> list[str]:
    """How to run the command line of the checkout at `root` (this one's or another's)."""
    return [sys.executable, "-c", FROM_TREE, str(root)]


# Every process may use bytecode caches, as an installed program does (pip compiles a package
# it installs): they are written to a temporary folder (PYTHONPYCACHEPREFIX) by a first run
# that is not counted, even where the environment says PYTHONDONTWRITEBYTECODE (which would
# make every run compile the packages' sources again, and the figures measure that instead).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def instructions(argv: list[str], stdin: bytes, expect: int) -> int:
    """Instructions one run of `argv` executes, counted by callgrind."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        input=stdin,
        capture_output=True,
        check=False,
        env=ENV,
    )
    if done.returncode != expect:
        raise AssertionError(f"{argv} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    found = re.search(rb"Collected : (\d+)", done.stderr)
    if found is None:
        raise AssertionError(f"callgrind printed no count: {done.stderr.decode()[-500:]}")
    return int(found[1])


def timed(argv: list[str], stdin: bytes, expect: int) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the child's own resource usage) of one process."""
    start = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV
    )
    assert process.stdin is not None
    assert process.stderr is not None
    process.stdin.write(stdin)  # a payload of a few hundred bytes: fits the pipe's buffer
    process.stdin.close()
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stderr.close()
    if process.returncode != expect:
        raise AssertionError(f"{argv} exited {process.returncode}: {err.decode()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime


def in_process_status(folder: Path, repeat: int) -> float:
    """Median seconds of ``board status`` run in this process (start-up excluded)."""
    from strategies._cli import main

    times = []
    for _ in range(repeat):
        out = io.StringIO()
        start = time.perf_counter()
        with contextlib.redirect_stdout(out):
            code = main(["board", "status", str(folder)])
        times.append(time.perf_counter() - start)
        if code != 0 or "complete" not in out.getvalue():
            raise AssertionError(f"board status failed ({code}): {out.getvalue()[-500:]}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (15)")
    parser.add_argument("--tasks", type=int, default=10_000, help="the board's tasks (10,000)")
    parser.add_argument(
        "--before", type=Path, help="another checkout: run its stop hook too, for a before/after"
    )
    parser.add_argument(
        "--instructions", action="store_true", help="count the hook's instructions (callgrind)"
    )
    args = parser.parse_args()
    harness = harness_argv()
    with (
        tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp,
        tempfile.TemporaryDirectory(prefix="bench-cli-pycache-") as cache,
    ):
        ENV["PYTHONPYCACHEPREFIX"] = cache
        root = Path(tmp)
        board = make_board(root, args.tasks)
        hook, payload = make_hook(root)
        demo = ROOT / "fixtures" / "demo" / "ralph.toml"
        rows: list[tuple[str, list[str], bytes, int]] = [
            ("python -c pass", [sys.executable, "-c", "pass"], b"", 0),
            (
                "python: import sqlite3, json, argparse",
                [sys.executable, "-c", "import sqlite3, json, argparse"],
                b"",
                0,
            ),
            (EVENT_LOOP, [sys.executable, "-c", "import anyio; anyio.run(anyio.sleep, 0)"], b"", 0),
            *([("node -e 0", [NODE, "-e", "0"], b"", 0)] if NODE else []),
            ("harness --help", [*harness, "--help"], b"", 0),
            (
                f"harness board status ({args.tasks:,})",
                [*harness, "board", "status", str(board)],
                b"",
                0,
            ),
            (
                "harness hook claude-stop",
                [
                    *harness,
                    "hook",
                    "claude-stop",
                    "--spec",
                    str(hook / "spec.toml"),
                    "--state-dir",
                    str(root / "hook-state"),
                ],
                payload,
                0,
            ),
            (
                "harness check",
                [
                    *harness,
                    "check",
                    str(hook / "spec.toml"),
                    "--workspace",
                    str(hook / "workspace"),
                ],
                b"",
                0,
            ),
            (
                "harness run fixtures/demo/ralph.toml",
                [*harness, "run", "-q", str(demo), "--transcript", str(root / "demo.jsonl")],
                b"",
                0,
            ),
        ]
        hook_args = ["hook", "claude-stop", "--spec", str(hook / "spec.toml")]
        if args.before is not None:
            for label, tree in (("before", args.before.resolve()), ("after", ROOT)):
                state = ["--state-dir", str(root / f"hook-state-{label}")]
                argv = [*from_tree(tree), *hook_args, *state]
                rows.append((f"harness hook claude-stop ({label})", argv, payload, 0))
        walls: dict[str, list[float]] = {name: [] for name, *_ in rows}
        cpus: dict[str, list[float]] = {name: [] for name, *_ in rows}
        for _name, argv, stdin, expect in rows:  # the bytecode caches written, not counted
            timed(argv, stdin, expect)
        for _ in range(args.rounds):
            for name, argv, stdin, expect in rows:
                wall, cpu = timed(argv, stdin, expect)
                walls[name].append(wall)
                cpus[name].append(cpu)
        inside = in_process_status(board, max(args.rounds // 3, 3))
        counted = {
            name: instructions(argv, stdin, expect)
            for name, argv, stdin, expect in rows
            if args.instructions and (name.startswith("python") or "hook" in name)
        }
    floor = statistics.median(walls[rows[1][0]])
    print(f"fresh processes, median of {args.rounds} interleaved rounds ({sys.version.split()[0]})")
    print(f"{'command':<42} {'wall ms':>8} {'cpu ms':>8} {'wall - floor':>13}")
    for name, *_ in rows:
        wall = statistics.median(walls[name])
        cpu = statistics.median(cpus[name])
        print(f"{name:<42} {wall * 1e3:8.1f} {cpu * 1e3:8.1f} {(wall - floor) * 1e3:+12.1f}")
    ratio = statistics.median(walls["harness hook claude-stop"]) / statistics.median(
        walls["python -c pass"]
    )
    verdict = "met" if ratio <= HOOK_RATIO else "MISSED"
    print(f"stop hook over python -c pass: {ratio:.2f}x (target {HOOK_RATIO:g}x: {verdict})")
    loop_ratio = statistics.median(walls["harness hook claude-stop"]) / statistics.median(
        walls[EVENT_LOOP]
    )
    print(f"stop hook over the event loop's start-up: {loop_ratio:.2f}x (info)")
    verdict = "met" if inside * 1e3 <= STATUS_TARGET_MS else "MISSED"
    print(
        f"board status in-process, {args.tasks:,} tasks: {inside * 1e3:.1f} ms "
        f"(target {STATUS_TARGET_MS:.0f} ms: {verdict})"
    )
    if counted:
        print("instructions of one run (valgrind --tool=callgrind)")
        for name, count in counted.items():
            print(f"{name:<42} {count / 1e6:>10,.0f}M")


if __name__ == "__main__":
    main()
