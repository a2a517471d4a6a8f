"""What extenders of `checks` need: the descriptions of the config tables a spec's
``[[checks]]`` and sandboxes accept (`CHECKS`, `SANDBOXES`), for loaders and the spec reference,
and a test suite's baseline and last verdict as data (`SuiteBaseline`, `TestResults`,
`LastVerdict`), for code that keeps them between processes (the stop hooks).

They load on first use, so importing `checks` does not pay for them.
"""

import typing

from harness.extend import lazy_exports as _lazy_exports

from ._protocol import CompletionCheck, KeepsBaseline, KeepsLastVerdict, PreparesForRun

if typing.TYPE_CHECKING:
    from ._baseline import SuiteBaseline
    from ._check_config import CHECKS, SANDBOXES
    from ._last_verdict import LastVerdict
    from ._test_results import TestResults

__getattr__, __dir__ = _lazy_exports(
    __name__,
    globals(),
    {
        "CHECKS": "checks._check_config",
        "LastVerdict": "checks._last_verdict",
        "SANDBOXES": "checks._check_config",
        "SuiteBaseline": "checks._baseline",
        "TestResults": "checks._test_results",
    },
)

__all__ = [
    "CHECKS",
    "CompletionCheck",
    "KeepsBaseline",
    "KeepsLastVerdict",
    "LastVerdict",
    "PreparesForRun",
    "SANDBOXES",
    "SuiteBaseline",
    "TestResults",
]
