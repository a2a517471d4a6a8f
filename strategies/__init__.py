"""Loop strategies (the plain loop, Ralph, SelfVerifying) and the run spec that builds a run."""

import typing

if typing.TYPE_CHECKING:
    from checks import ModelVerdict, parse_verdict

    from ._best_of import BestOf
    from ._best_of_ranking import Ranking, SmallestChange
    from ._best_of_ray import RayAttempts
    from ._loop import Loop
    from ._ralph import Ralph
    from ._reasons import (
        NoAttemptVerified,
        RalphCompletionUnmet,
        SelfVerifyExhausted,
        WinnerRefused,
        WorkspaceUnwritable,
    )
    from ._self_verifying import EVALUATOR_PROMPT, SelfVerifying
    from ._spec import Spec, SpecError, load_spec, spec_from_table

# Loaded on first use (PEP 562), so a run that needs none of these does not pay to import
# them: a fresh process that runs one turn is one of the bench's targets (bench/run.py, W3).
# `Loop` too: every `harness` command imports this package first (`strategies._cli`), and
# `harness board status` or `harness --help` need nothing of the loop.
_LAZY = {
    "Loop": "._loop",
    "BestOf": "._best_of",
    "Ranking": "._best_of_ranking",
    "RayAttempts": "._best_of_ray",
    "SmallestChange": "._best_of_ranking",
    "NoAttemptVerified": "._reasons",
    "WinnerRefused": "._reasons",
    "WorkspaceUnwritable": "._reasons",
    "RalphCompletionUnmet": "._reasons",
    "SelfVerifyExhausted": "._reasons",
    "Ralph": "._ralph",
    "EVALUATOR_PROMPT": "._self_verifying",
    "SelfVerifying": "._self_verifying",
    # The run spec: a TOML table -> a validated `Spec` -> `Spec.harness()`.
    "Spec": "._spec",
    "SpecError": "._spec",
    "load_spec": "._spec",
    "spec_from_table": "._spec",
    # One verdict reading for the evaluator and QuestionAnsweredCheck's judge (checks._verdict).
    "ModelVerdict": "checks",
    "parse_verdict": "checks",
}


# Renamed, importable from the old name for one release with a DeprecationWarning.
_MOVED = {"Verdict": "checks.ModelVerdict"}


def __getattr__(name: str) -> object:
    # The helper lives in `harness`: imported at the top, it would load all of `harness` for
    # every `harness` command, `--help` and `board status` included.
    from harness.extend import lazy_exports

    return lazy_exports(__name__, globals(), _LAZY, moved=_MOVED, stacklevel=3)[0](name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "BestOf",
    "EVALUATOR_PROMPT",
    "Loop",
    "ModelVerdict",
    "NoAttemptVerified",
    "Ralph",
    "RalphCompletionUnmet",
    "Ranking",
    "RayAttempts",
    "SelfVerifyExhausted",
    "SelfVerifying",
    "SmallestChange",
    "Spec",
    "SpecError",
    "WinnerRefused",
    "WorkspaceUnwritable",
    "load_spec",
    "parse_verdict",
    "spec_from_table",
]
