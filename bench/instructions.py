"""CPU instructions per turn and per run, counted by callgrind (which the machine's load does
not move), for the harness on W1's workload and for the bare loop.

    python bench/instructions.py                  # both backends
    python bench/instructions.py --backend trio

Each figure is the difference of two whole processes that differ only in the work measured,
so start-up, imports and warm-up cancel out:

- per turn: one session of 1,100 turns less one of 100, over 1,000;
- per run:  eleven 10-turn sessions less one, over ten, less ten turns at the per-turn rate
  (what setting up and closing a run costs: W1's "per-run fixed" row, in instructions).

Needs valgrind. A process under callgrind runs some fifty times slower: the whole script
takes a minute or two per backend.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _backends import BACKENDS

SHORT, LONG = 100, 1_100
RUN_TURNS, RUNS = 10, 11
WARM_UP = 10
# The same hash seed in every process: set and dict layouts, and so the work, repeat. The
# packages are imported from the tree this script is in, so that a copy of another commit
# (`git archive <commit> | tar -x -C /tmp/old`) measures that commit.
ROOT = Path(__file__).resolve().parent.parent
ENV = {"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def _child(backend_name: str, loop: str, turns: int, sessions: int) -> None:
    """The measured process: a warm-up session, then `sessions` sessions of `turns` turns."""
    from _bare import bare_script, bare_session
    from _workload import bench_harness, configure_logging, harness_session

    backend = BACKENDS[backend_name]
    configure_logging()

    async def main() -> None:
        # A warm-up session of the same size in every process (first-use caches, structlog's
        # logger), so that the differences count only the measured sessions.
        if loop == "bare":
            await bare_session(bare_script(WARM_UP - 1), backend.sleep, 0.0)
            script = bare_script(turns - 1)
            for _ in range(sessions):
                await bare_session(script, backend.sleep, 0.0)
        else:
            await harness_session(bench_harness(WARM_UP, backend.sleep, 0.0))
            built = bench_harness(turns, backend.sleep, 0.0)
            for _ in range(sessions):
                if await harness_session(built) != turns:
                    raise AssertionError(f"a session did not take {turns} turns")

    backend.run(main)


def _instructions(backend: str, loop: str, turns: int, sessions: int) -> int:
    """Instructions a whole child process executes, as callgrind counts them."""
    child = [sys.executable, __file__, "--child", backend, loop, str(turns), str(sessions)]
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *child]
    done = subprocess.run(command, capture_output=True, text=True, env=ENV, check=False)
    found = COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return int(found.group(1))


def measure(backend: str, loop: str) -> tuple[float, float]:
    """Instructions per turn and the per-run fixed cost, for `loop` on `backend`."""
    short = _instructions(backend, loop, SHORT, 1)
    long = _instructions(backend, loop, LONG, 1)
    per_turn = (long - short) / (LONG - SHORT)
    one = _instructions(backend, loop, RUN_TURNS, 1)
    many = _instructions(backend, loop, RUN_TURNS, RUNS)
    per_run = (many - one) / (RUNS - 1) - RUN_TURNS * per_turn
    return per_turn, per_run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare loop's figures")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        backend, loop, turns, sessions = args.child
        _child(backend, loop, int(turns), int(sessions))
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("bench/instructions.py needs valgrind (apt-get install valgrind)")
    backends = ["asyncio", "trio"] if args.backend == "both" else [args.backend]
    loops = ["harness"] if args.no_bare else ["bare", "harness"]
    # Once outside valgrind first: a process that compiles modules and writes their bytecode
    # caches would count that work in the first figure only.
    for backend in backends:
        for loop in loops:
            child = [sys.executable, __file__, "--child", backend, loop, str(RUN_TURNS), "1"]
            subprocess.run(child, env=ENV, check=True)
    print(f"{'backend':<8}  {'loop':<8}  {'instructions/turn':>17}  {'per-run fixed':>13}")
    for backend in backends:
        for loop in loops:
            per_turn, per_run = measure(backend, loop)
            print(f"{backend:<8}  {loop:<8}  {per_turn:>17,.0f}  {per_run:>13,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
