"""Loop strategies: the plain loop, Ralph, and SelfVerifying."""

from ._loop import Loop
from ._ralph import Ralph
from ._reasons import RalphCompletionUnmet, SelfVerifyExhausted
from ._self_verifying import EVALUATOR_PROMPT, SelfVerifying, Verdict, parse_verdict

__all__ = [
    "EVALUATOR_PROMPT",
    "Loop",
    "Ralph",
    "RalphCompletionUnmet",
    "SelfVerifyExhausted",
    "SelfVerifying",
    "Verdict",
    "parse_verdict",
]
