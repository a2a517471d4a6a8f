"""What a long transcript costs the viewer and `fixture_from_transcript`: wall time and peak
memory, against the targets (a 200 MB transcript in at most 10 s and 200 MB).

    python bench/transcripts.py              # a ~200 MB transcript
    python bench/transcripts.py --size 20    # a quicker pass on ~20 MB

The transcript is written with the harness's own `JsonlTranscript` from realistic events: a
Ralph run of many iterations and thousands of turns, each with its model text, tool calls
(file writes with their content, commands) and their outputs (a few KB, now and then tens of
KB), checks that fail with a long reason, and the feedback they inject. Each measurement runs
in a fresh child process that reports its wall time and its peak resident memory
(`resource.getrusage`); the "imports only" row is what a child holds before reading anything.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import (
    CheckFailed,
    Completed,
    FeedbackInjected,
    IterationStarted,
    JsonlTranscript,
    RunHalted,
    RunStarted,
    ToolCall,
    ToolCalled,
    TurnFinished,
    TurnStarted,
    Usage,
)
from harness.extend import ModelResponse

TARGET_SECONDS = 10.0
TARGET_MB = 200.0
PHRASE = (
    "the test suite fails because the parser drops the last field when a line ends in a comma "
    "so I will read the module again and change the loop that splits the fields then run it"
)
WORDS = tuple(PHRASE.split())


def _prose(rng: random.Random, words: int) -> str:
    lines = []
    for _ in range(max(1, words // 12)):
        lines.append(" ".join(rng.choice(WORDS) for _ in range(12)))
    return "\n".join(lines)


def _code(rng: random.Random, lines: int) -> str:
    return "\n".join(
        f"    {rng.choice(WORDS)}_{n} = parse(line[{n}:], sep={rng.choice(WORDS)!r})  # {n}"
        for n in range(lines)
    )


def write_transcript(path: Path, size_mb: float) -> tuple[int, int]:
    """Write a transcript of about `size_mb` MB; returns its events and turns."""
    rng = random.Random(7)
    sink = JsonlTranscript(path)
    target = size_mb * 1_000_000
    at = 0.0
    events = turns = 0
    usage = Usage()

    sink.emit(
        RunStarted(0.0, "bench-run", "make the parser keep every field", "ralph", "/w", "tests")
    )
    iteration = 0
    while path.stat().st_size < target:
        iteration += 1
        at += 0.01
        sink.emit(IterationStarted(at, "builder", iteration))
        for turn in range(1, rng.randint(8, 25)):
            turns += 1
            at += 0.05
            sink.emit(TurnStarted(at, "builder", iteration, turn))
            calls = tuple(
                ToolCall(
                    f"call_{turns}_{n}",
                    rng.choice(("write_file", "run", "read_file")),
                    {
                        "path": f"src/mod_{rng.randint(1, 40)}.py",
                        "content": _code(rng, rng.randint(5, 60)),
                    },
                )
                for n in range(rng.choice((1, 1, 2, 3)))
            )
            spent = Usage(
                rng.randint(2_000, 60_000), rng.randint(50, 2_000), 0, 0.0004 * turns % 0.05
            )
            usage = usage + spent
            at += rng.random() * 3
            response = ModelResponse(_prose(rng, rng.randint(20, 300)), calls, spent, "bench-model")
            sink.emit(TurnFinished(at, "builder", iteration, turn, response))
            for call in calls:
                big = rng.random() < 0.05
                output = _code(rng, rng.randint(800, 1_500) if big else rng.randint(30, 200))
                sink.emit(ToolCalled(at, "builder", turn, call, output, rng.random() < 0.08))
            events += 2 + len(calls)
        reason = "3 of 12 tests fail:\n" + _code(rng, 40)
        sink.emit(CheckFailed(at, "builder", turn, "tests", reason))
        sink.emit(FeedbackInjected(at, "builder", turn, "previous_iteration", reason))
        events += 3
    sink.emit(RunHalted(at, Completed(), True, turns, 0, usage))
    sink.close()
    return events + 2, turns


CHILD = {
    "imports only": "",
    "harness view": (
        "from strategies._viewer import write_view\n"
        "view = write_view(sys.argv[1], sys.argv[2])\n"
        "assert view.runs and view.runs[-1].halt is not None\n"
    ),
    "fixture_from_transcript": (
        "try:\n"
        "    from harness.testing import fixture_from_transcript\n"
        "except ImportError:  # a checkout from before harness.testing\n"
        "    from harness import fixture_from_transcript\n"
        "lines = fixture_from_transcript(sys.argv[1])\n"
        "assert lines\n"
    ),
}


def measure(name: str, transcript: Path, page: Path, project: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of `name`'s work in a fresh child
    process."""
    code = (
        "import json, resource, sys, time\n"
        "sys.path.insert(0, '.')\n"
        "import harness, strategies._viewer\n"
        "started, cpu_started = time.perf_counter(), time.process_time()\n"
        f"{CHILD[name]}"
        "seconds = time.perf_counter() - started\n"
        "usage = resource.getrusage(resource.RUSAGE_SELF)\n"
        "cpu = time.process_time() - cpu_started\n"
        "print(json.dumps([seconds, cpu, usage.ru_maxrss / 1024]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(transcript), str(page)],
        capture_output=True,
        text=True,
        check=False,
        cwd=project,
    )
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    seconds, cpu, peak = json.loads(done.stdout.strip().splitlines()[-1])
    return float(seconds), float(cpu), float(peak)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=float, default=200.0, help="transcript size in MB")
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="CHECKOUT",
        help="also measure the project in this folder (another checkout, e.g. an older commit)",
    )
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    projects = [("this", here)] + ([("compare", args.compare.resolve())] if args.compare else [])
    with tempfile.TemporaryDirectory(prefix="bench-transcripts-") as folder:
        transcript = Path(folder) / "long.jsonl"
        started = time.perf_counter()
        events, turns = write_transcript(transcript, args.size)
        size = transcript.stat().st_size / 1_000_000
        print(
            f"transcript: {size:.0f} MB, {events:,} events, {turns:,} turns "
            f"(written in {time.perf_counter() - started:.1f} s); "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )
        print(f"targets: at most {TARGET_SECONDS:g} s and {TARGET_MB:g} MB peak")
        print(f"{'project':8} {'':24} {'wall s':>7} {'cpu s':>7} {'peak MB':>8}")
        page = Path(folder) / "long.html"
        for label, project in projects:
            for name in CHILD:
                seconds, cpu, peak = measure(name, transcript, page, project)
                verdict = ""
                if CHILD[name]:
                    ok = seconds <= TARGET_SECONDS and peak <= TARGET_MB
                    verdict = "ok" if ok else "over the target"
                print(f"{label:8} {name:24} {seconds:7.2f} {cpu:7.2f} {peak:8.0f}   {verdict}")
            print(f"{label:8} {'  the page':24} {page.stat().st_size / 1_000_000:7.0f} MB")


if __name__ == "__main__":
    main()
