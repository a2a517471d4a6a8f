"""Completion checks: the gate an agent's claim of "done" must pass.

Each check's `check(state)` returns None when the work is complete and otherwise a short
reason naming what is missing; `description()` tells the agent up front what "done" means.
Checks combine with ``&`` (`AllOf`) and ``|`` (`AnyOf`) and build from TOML tables with
`check_from_config`. Commands run through a `SandboxProvider`.
"""

from ._always import AlwaysComplete
from ._command import CommandCheck
from ._compose import AllOf, AnyOf, Combinable
from ._config import CHECK_TYPES, check_from_config
from ._feature_list import Feature, FeatureListCheck, FeatureListError, load_features
from ._files import FilesCheck
from ._judge import JUDGE_SYSTEM, QuestionAnsweredCheck, parse_verdict
from ._plan_check import PlanCheck
from ._protocol import CompletionCheck, PreparesForRun
from ._sandbox import BubblewrapSandbox, LocalSandbox, SandboxProvider, sandbox_by_name
from ._signal import DEFAULT_SIGNAL, SignalCheck
from ._sql import SqlResult, SqlResultCheck, sqlite_query_tool
from ._test_output import failing_tests
from ._test_suite import TestSuiteCheck

__all__ = [
    "AllOf",
    "AlwaysComplete",
    "AnyOf",
    "BubblewrapSandbox",
    "CHECK_TYPES",
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
    "PlanCheck",
    "PreparesForRun",
    "QuestionAnsweredCheck",
    "SandboxProvider",
    "SignalCheck",
    "SqlResult",
    "SqlResultCheck",
    "TestSuiteCheck",
    "check_from_config",
    "failing_tests",
    "load_features",
    "parse_verdict",
    "sandbox_by_name",
    "sqlite_query_tool",
]
