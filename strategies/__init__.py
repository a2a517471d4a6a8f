"""Loop strategies (the plain loop, Ralph, SelfVerifying) and the run spec that builds a run."""

import typing

from harness.extend import lazy_exports as _lazy_exports

from ._loop import Loop
from ._reasons import RalphCompletionUnmet, SelfVerifyExhausted

if typing.TYPE_CHECKING:
    from checks import ModelVerdict, parse_verdict

    from ._ralph import Ralph
    from ._self_verifying import EVALUATOR_PROMPT, SelfVerifying
    from ._spec import Spec, SpecError, load_spec, spec_from_table

# Loaded on first use (PEP 562), so a run that needs none of these does not pay to import
# them: a fresh process that runs one turn is one of the bench's targets (bench/run.py, W3).
_LAZY = {
    "Ralph": "._ralph",
    "EVALUATOR_PROMPT": "._self_verifying",
    "SelfVerifying": "._self_verifying",
    # The run spec: a TOML table -> a validated `Spec` -> `Spec.harness()`.
    "Spec": "._spec",
    "SpecError": "._spec",
    "load_spec": "._spec",
    "spec_from_table": "._spec",
    # One verdict reading for the evaluator and QuestionAnsweredCheck's judge (checks._verdict).
    "ModelVerdict": "._self_verifying",
    "parse_verdict": "._self_verifying",
}


# Renamed, importable from the old name for one release with a DeprecationWarning.
__getattr__, __dir__ = _lazy_exports(
    __name__, globals(), _LAZY, moved={"Verdict": "checks.ModelVerdict"}
)


__all__ = [
    "EVALUATOR_PROMPT",
    "Loop",
    "ModelVerdict",
    "Ralph",
    "RalphCompletionUnmet",
    "SelfVerifyExhausted",
    "SelfVerifying",
    "Spec",
    "SpecError",
    "load_spec",
    "parse_verdict",
    "spec_from_table",
]
