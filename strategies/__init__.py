"""Loop strategies: the plain loop, Ralph, and SelfVerifying."""

import importlib
import typing

from ._loop import Loop
from ._reasons import RalphCompletionUnmet, SelfVerifyExhausted

if typing.TYPE_CHECKING:
    from ._ralph import Ralph
    from ._self_verifying import EVALUATOR_PROMPT, SelfVerifying, Verdict, parse_verdict

# Loaded on first use (PEP 562), so a run that needs none of these does not pay to import
# them: a fresh process that runs one turn is one of the bench's targets (bench/run.py, W3).
_LAZY = {
    "Ralph": "._ralph",
    "EVALUATOR_PROMPT": "._self_verifying",
    "SelfVerifying": "._self_verifying",
    "Verdict": "._self_verifying",
    "parse_verdict": "._self_verifying",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


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
