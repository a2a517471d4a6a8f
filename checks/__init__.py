"""Completion checks: the gate an agent's claim of "done" must pass.

Each check's `check(state)` returns None when the work is complete and otherwise a short
reason naming what is missing; `description()` tells the agent up front what "done" means.
Checks combine with ``&`` (`AllOf`) and ``|`` (`AnyOf`) and build from TOML tables with
`check_from_config`. Commands run through a `SandboxProvider`.
"""

import typing

try:
    from harness.extend import lazy_exports as _lazy_exports
except ModuleNotFoundError as _error:  # a harness.py of the user's, found first on sys.path
    import harness as _found

    if _error.name != "harness.extend" or hasattr(_found, "__path__"):
        raise
    # The words of `harness`'s own check (harness._shadowing), which cannot run here.
    raise ImportError(
        f"{_found.__file__} shadows completion-harness's 'harness' package: Python finds it "
        "first on sys.path (the current folder or PYTHONPATH). Rename it (for example to "
        "myharness.py), or run from a folder that does not hold it.",
        name="harness",
        path=_found.__file__,
    ) from None

from ._always import AlwaysComplete
from ._compose import AllOf, AnyOf, Combinable, measures_progress
from ._progress import Assessment, MeasuresProgress, WorkProgress
from ._protocol import CompletionCheck, PreparesForRun
from ._run_check import CheckCannotRun, CheckVerdict, run_check

if typing.TYPE_CHECKING:
    from ._check_config import CHECK_TYPES, check_from_config
    from ._command import CommandCheck
    from ._feature_list import Feature, FeatureListCheck, FeatureListError, load_features
    from ._files import FilesCheck
    from ._judge import JUDGE_SYSTEM, QuestionAnsweredCheck
    from ._plan_check import PlanCheck
    from ._sandbox import BubblewrapSandbox, LocalSandbox, SandboxProvider, sandbox_by_name
    from ._signal import DEFAULT_SIGNAL, SignalCheck
    from ._sql import SqlResult, SqlResultCheck, sqlite_query_tool
    from ._test_output import failing_tests
    from ._test_suite import TestSuiteCheck
    from ._verdict import ModelVerdict, parse_verdict

# Loaded on first use (PEP 562), so a run that needs none of these does not pay to import
# them: a fresh process that runs one turn is one of the bench's targets (bench/run.py, W3).
_LAZY = {
    "CommandCheck": "._command",
    "CHECK_TYPES": "._check_config",
    "check_from_config": "._check_config",
    "Feature": "._feature_list",
    "FeatureListCheck": "._feature_list",
    "FeatureListError": "._feature_list",
    "load_features": "._feature_list",
    "FilesCheck": "._files",
    "JUDGE_SYSTEM": "._judge",
    "QuestionAnsweredCheck": "._judge",
    "PlanCheck": "._plan_check",
    "BubblewrapSandbox": "._sandbox",
    "LocalSandbox": "._sandbox",
    "SandboxProvider": "._sandbox",
    "sandbox_by_name": "._sandbox",
    "DEFAULT_SIGNAL": "._signal",
    "SignalCheck": "._signal",
    "SqlResult": "._sql",
    "SqlResultCheck": "._sql",
    "sqlite_query_tool": "._sql",
    "failing_tests": "._test_output",
    "TestSuiteCheck": "._test_suite",
    "ModelVerdict": "._verdict",
    "parse_verdict": "._verdict",
}


# Renamed, importable from the old name for one release with a DeprecationWarning.
__getattr__, __dir__ = _lazy_exports(
    __name__, globals(), _LAZY, moved={"Verdict": "checks.ModelVerdict"}
)


__all__ = [
    "AllOf",
    "AlwaysComplete",
    "AnyOf",
    "Assessment",
    "BubblewrapSandbox",
    "CHECK_TYPES",
    "CheckCannotRun",
    "CheckVerdict",
    "Combinable",
    "CommandCheck",
    "CompletionCheck",
    "DEFAULT_SIGNAL",
    "Feature",
    "FeatureListCheck",
    "FeatureListError",
    "FilesCheck",
    "JUDGE_SYSTEM",
    "LocalSandbox",
    "MeasuresProgress",
    "ModelVerdict",
    "PlanCheck",
    "PreparesForRun",
    "QuestionAnsweredCheck",
    "SandboxProvider",
    "SignalCheck",
    "SqlResult",
    "SqlResultCheck",
    "TestSuiteCheck",
    "WorkProgress",
    "check_from_config",
    "failing_tests",
    "load_features",
    "measures_progress",
    "parse_verdict",
    "run_check",
    "sandbox_by_name",
    "sqlite_query_tool",
]
