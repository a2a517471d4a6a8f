"""A best-of run's attempts, for `harness run`'s report and its ``--json`` object."""

from __future__ import annotations

from typing import Any, TextIO

from harness import RunResult

from ._terminal import for_terminal


def print_attempts(result: RunResult, out: TextIO) -> None:
    """One line per attempt (its halt, what the check measured, whether it won), then the
    winner's fate; nothing for a run without attempts."""
    if not result.attempts:
        return
    print(f"  attempts ({len(result.attempts)}):", file=out)
    for attempt in result.attempts:
        print(f"    {for_terminal(attempt.describe(), lines=True)}", file=out)
    winner = next((a for a in result.attempts if a.won), None)
    if winner is None:
        print("  no attempt was verified; the workspace was not changed", file=out)
    elif winner.applied:
        files = ", ".join(winner.changed) or "no files"
        line = f"  winner: attempt {winner.number}, applied to the workspace ({files})"
        print(for_terminal(line, lines=True), file=out)
    else:
        print(
            f"  winner: attempt {winner.number}, refused by the final check in the "
            "workspace, which was left as it was",
            file=out,
        )


def attempts_json(result: RunResult | None) -> list[dict[str, Any]] | None:
    """The ``attempts`` of the ``--json`` object: None for a run without attempts."""
    if result is None or not result.attempts:
        return None
    return [
        {
            "attempt": a.number,
            "verified": a.verified,
            "halt": {**a.halt_reason.to_dict(), "description": a.halt_reason.describe()},
            "progress": a.progress.to_dict() if a.progress is not None else None,
            "workspace": a.workspace,
            "changed": list(a.changed),
            "won": a.won,
            "applied": a.applied,
            "turns": a.result.turns if a.result is not None else 0,
            "usage": a.result.usage.to_dict() if a.result is not None else None,
            "wave": a.wave,
            "rank": a.rank,
            "score": a.score.to_dict() if a.score is not None else None,
        }
        for a in result.attempts
    ]
