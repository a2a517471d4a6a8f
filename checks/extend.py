"""What extenders of `checks` need: the descriptions of the config tables a spec's
``[[checks]]`` and sandboxes accept (`CHECKS`, `SANDBOXES`), for loaders and the spec reference,
and a test suite's baseline as data (`SuiteBaseline`, `TestResults`), for code that keeps it
between processes (the stop hooks).

They load on first use, so importing `checks` does not pay for them.
"""

import typing

from harness.extend import lazy_exports as _lazy_exports

from ._protocol import CompletionCheck, KeepsBaseline, PreparesForRun

if typing.TYPE_CHECKING:
    from ._baseline import SuiteBaseline
    from ._check_config import CHECKS, SANDBOXES
    from ._test_results import TestResults

__getattr__, __dir__ = _lazy_exports(
    __name__,
    globals(),
    {
        "CHECKS": "checks._check_config",
        "SANDBOXES": "checks._check_config",
        "SuiteBaseline": "checks._baseline",
        "TestResults": "checks._test_results",
    },
)

__all__ = [
    "CHECKS",
    "CompletionCheck",
    "KeepsBaseline",
    "PreparesForRun",
    "SANDBOXES",
    "SuiteBaseline",
    "TestResults",
]
