"""`DEFAULT_IGNORE`: the names a comparison of the workspace skips unless told otherwise.

Apart from the scanner (`_fingerprint`) so that the spec's tables can state the default without
loading the scanner and the hashing it needs (a stop hook reads those tables at every stop).
"""

from __future__ import annotations

from harness.extend import NOT_WORK

DEFAULT_IGNORE: tuple[str, ...] = tuple(sorted(NOT_WORK))
"""The folders that are not work (`harness.extend.NOT_WORK`), in a stable order."""
