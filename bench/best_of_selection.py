"""What best_verified and a second wave change, on tasks one attempt solves only sometimes.

    python bench/best_of_selection.py            # 8 tasks x 5 seeds per configuration
    python bench/best_of_selection.py --quick    # 4 tasks x 3 seeds

The task set: task t is a folder (no git: each attempt works in a copy) holding ``f.py``,
whose ``f(x)`` should return ``x * k + c`` (k and c set by t) and does not, and the protected
``check.py``, which asserts ``f(1)`` and ``f(2)`` and says what ``f`` returned when it is
wrong. The completion check runs ``python3 check.py``.

The model is `Guesser`, a scripted stochastic client, seeded (``--seed``, then the task and
the attempt's number): each attempt writes one of seven bodies for ``f`` and claims done
(one Ralph iteration). Two bodies are right: a one-line fix (2 lines written), and a
rewrite with a docstring and a helper module (15 lines written, one more file); five are
wrong, each returning something else for ``f(1)``. Each body has a weight per task (each
right one 1 + t % 3 out of 16): one attempt is verified with probability 0.125, 0.25 or
0.375 (0.23 on average over the 8 tasks), with the one-line fix half the time. An attempt
whose task carries a later wave's digest does not write a body whose wrong ``f(1)`` the
digest reports ("f(1) returned V"): it follows the digest perfectly, so the waves figure is
what the digest gives a model that reads it, not what a real model makes of it.

Configurations, each run over every task and seed, attempts one at a time:
  first_verified n=2   the first of two attempts the check accepts
  best_verified  n=2   both attempts run; the smallest verified change is applied
  first_verified n=4   four attempts (as many as two waves of two)
  best_verified  n=4   four attempts, all run; the smallest verified change is applied
  waves=2        n=2   a second wave of two, told what the first tried, when it failed
Printed: the verified rate, the attempts that ran per run, and the lines the applied
attempt wrote (mean over verified runs).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from attrs import define, field

from checks import CommandCheck
from harness import Harness, RunResult, ToolCall, Usage, workspace_tools
from harness.extend import ModelClient, ModelRequest, ModelResponse
from strategies import BestOf, Ralph
from termination import Budget, TerminationPolicy

USAGE = Usage(200, 40, 0, 0.001)
CHECK = """import f

for x in (1, 2):
    got, want = f.f(x), x * {k} + {c}
    assert got == want, f"f({{x}}) returned {{got}}, expected {{want}}"
"""
BUGGY = "def f(x):\n    return x * {k} - {c}\n"
RIGHT = "def f(x):\n    return x * {k} + {c}\n"
VERBOSE = (
    '"""The function the task is about."""\n\nfrom helper import scale\n\n\n'
    'def f(x):\n    """x scaled by {k}, plus {c}."""\n    scaled = scale(x, {k})\n'
    "    total = scaled + {c}\n    return total\n"
)
HELPER = '"""Helpers."""\n\n\ndef scale(x, k):\n    return x * k\n'
WRONG = (
    "def f(x):\n    return x * {k} + {c} + 1\n",
    "def f(x):\n    return x + {k} + {c}\n",
    "def f(x):\n    return (x + {c}) * {k}\n",
    "def f(x):\n    return x * {c} + {k} + 2\n",
    "def f(x):\n    return x * {k} - {c}\n",
)
SAID = re.compile(r"f\(1\) returned (-?\d+)")


def task_values(task: int) -> tuple[int, int]:
    return 3 + task, 5 + 2 * task


def bodies(task: int) -> list[tuple[str, dict[str, str], float, int | None]]:
    """Each body the model may write: its files, its weight, and its ``f(1)`` if wrong."""
    k, c = task_values(task)
    right = 1 + task % 3
    found: list[tuple[str, dict[str, str], float, int | None]] = [
        ("right", {"f.py": RIGHT.format(k=k, c=c)}, right, None),
        ("verbose", {"f.py": VERBOSE.format(k=k, c=c), "helper.py": HELPER}, right, None),
    ]
    for index, template in enumerate(WRONG):
        body = template.format(k=k, c=c)
        scope: dict[str, Any] = {}
        exec(body, scope)  # the bench's own bodies, to know what each returns
        found.append(
            (f"wrong{index}", {"f.py": body}, (16 - 2 * right) / len(WRONG), scope["f"](1))
        )
    return found


@define
class Guesser:
    """A seeded stochastic model client (see the module docstring)."""

    seed: int
    task: int
    attempt: int = 0
    turns: int = field(default=0)

    def for_attempt(self, attempt: int) -> ModelClient:
        return Guesser(self.seed, self.task, attempt)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.turns += 1
        if self.turns > 1:
            return ModelResponse(text="Done.", usage=USAGE)
        told = "\n".join(m.content for m in request.messages if m.role == "user")
        tried = {int(v) for v in SAID.findall(told)}
        options = [b for b in bodies(self.task) if b[3] is None or b[3] not in tried]
        rng = random.Random(f"{self.seed}:{self.task}:{self.attempt}")
        _, files, _, _ = rng.choices(options, weights=[b[2] for b in options])[0]
        calls = tuple(
            ToolCall(f"w{i}", "write_file", {"path": path, "content": text})
            for i, (path, text) in enumerate(files.items())
        )
        return ModelResponse(tool_calls=calls, usage=USAGE)


def make_task(folder: Path, task: int) -> Path:
    k, c = task_values(task)
    folder.mkdir(parents=True)
    (folder / "f.py").write_text(BUGGY.format(k=k, c=c))
    (folder / "check.py").write_text(CHECK.format(k=k, c=c))
    return folder


async def one(root: Path, task: int, seed: int, strategy: BestOf) -> RunResult:
    workspace = make_task(Path(tempfile.mkdtemp(dir=root)) / f"t{task}-s{seed}", task)
    harness = Harness(
        model=Guesser(seed, task),
        policy=TerminationPolicy(
            completion_check=CommandCheck(["python3", "check.py"], timeout=60),
            protected=["check.py"],
            budget=Budget(max_turns=40),
        ),
        strategy=strategy,
        tools=workspace_tools(),
        workspace=workspace,
    )
    k, c = task_values(task)
    return await harness.run(f"Fix f in f.py: f(x) must return x * {k} + {c}.")


CONFIGS: dict[str, dict[str, Any]] = {
    "first_verified n=2": {"n": 2},
    "best_verified  n=2": {"n": 2, "pick": "best_verified"},
    "first_verified n=4": {"n": 4},
    "best_verified  n=4": {"n": 4, "pick": "best_verified"},
    "waves=2        n=2": {"n": 2, "waves": 2},
}


def applied_lines(result: RunResult) -> int | None:
    """The lines of the files the applied attempt wrote (None: nothing was applied)."""
    winner = next((a for a in result.attempts if a.applied), None)
    if winner is None or winner.result is None:
        return None
    written = [
        str(call.arguments.get("content", ""))
        for session in winner.result.sessions
        for message in session.messages
        for call in message.tool_calls
    ]
    return sum(len(text.splitlines()) for text in written)


async def main(tasks: int, seeds: Sequence[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print(f"{tasks} tasks x {len(seeds)} seeds per configuration, attempts one at a time")
        print(f"{'configuration':20} {'verified':>9} {'attempts/run':>13} {'lines written':>14}")
        for name, settings in CONFIGS.items():
            strategy = BestOf(strategy=Ralph(max_iterations=1), concurrency=1, **settings)
            verified, ran, lines = 0, [], []
            for task in range(tasks):
                for seed in seeds:
                    result = await one(root, task, seed, strategy)
                    verified += result.verified
                    ran.append(sum(1 for a in result.attempts if a.result is not None))
                    size = applied_lines(result)
                    if size is not None:
                        lines.append(size)
            runs = tasks * len(seeds)
            mean_lines = f"{statistics.mean(lines):.1f}" if lines else "-"
            print(
                f"{name:20} {verified:>4}/{runs:<4} {statistics.mean(ran):>13.2f} {mean_lines:>14}",
                flush=True,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 tasks x 3 seeds")
    parser.add_argument("--seed", type=int, default=0, help="the first seed")
    args = parser.parse_args()
    tasks, count = (4, 3) if args.quick else (8, 5)
    anyio.run(main, tasks, range(args.seed, args.seed + count))
