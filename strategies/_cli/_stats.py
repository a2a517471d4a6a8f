"""`harness stats PATH...`: the ledger across runs (see `strategies._viewer._ledger`), as text
or, with ``--json``, one JSON object. Exit 0 with figures, 2 when a path does not exist or no
run could be read."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.extend import dump_json

from ._terminal import for_terminal

EXIT_OK = 0
EXIT_ERROR = 2


def handle(args: argparse.Namespace) -> int:
    from strategies._viewer._ledger import read_ledger

    try:
        ledger = read_ledger(args.paths)
    except FileNotFoundError as exc:
        print(f"harness: no such file or folder: {exc.filename!r}", file=sys.stderr)
        return EXIT_ERROR
    for problem in ledger.skipped:
        print(f"harness: skipped {for_terminal(problem)}", file=sys.stderr)
    figures = ledger.to_json()
    if args.json:
        print(dump_json(figures))
    else:
        print(describe(figures))
    return EXIT_OK if ledger.runs else EXIT_ERROR


def describe(figures: dict[str, Any]) -> str:
    """The figures as lines for a person (the names that check and tests chose are shown
    through `for_terminal`: text from outside)."""
    runs, tasks = figures["runs"], figures["tasks"]
    lines = [
        f"runs: {runs} ({figures['verified_runs']} verified, {_percent(figures['verified_rate'])})",
        f"tasks: {tasks} ({figures['verified_tasks']} verified; "
        f"{_percent(figures['first_attempt_rate'])} at the first attempt)",
        "per verified task: "
        f"{_number(figures['attempts_per_verified_task'])} attempts, "
        f"{_number(figures['iterations_per_verified_task'])} iterations, "
        f"{_dollars(figures['cost_per_verified_task'])} (the failed runs' cost included)",
        f"cost in all: {_dollars(figures['cost_usd'])}"
        + (
            f" ({figures['runs_with_unknown_cost']} run(s) with an unknown price)"
            if figures["runs_with_unknown_cost"]
            else ""
        ),
    ]
    for title, key in (
        ("why the runs that did not verify stopped", "halt_causes"),
        ("claims sent back, per check", "rejections_per_check"),
        ("flaky tests seen", "flaky_tests"),
    ):
        counts = figures[key]
        if not counts:
            lines.append(f"{title}: none")
            continue
        lines.append(f"{title}:")
        lines.extend(f"  {count:>4}  {for_terminal(name)}" for name, count in counts.items())
    return "\n".join(lines)


def _percent(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _dollars(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"
