"""`CheckError`: why a completion check could not judge the work at a claim.

Two kinds, both "not complete" for the claim (the check fails closed) and both beyond the
agent's reach: the check's command could not start (`cannot_run`: exit 126 or 127, the test
runner's own module missing), or the check raised (`traceback` keeps where). The run records
the error on the claim's ``check.failed`` event; the same error at `max_check_errors` claims
in a row halts it, `CheckBroken`, instead of spending its budget on what the agent cannot fix.
"""

from __future__ import annotations

from attrs import frozen


@frozen
class CheckError:
    """Why a check could not judge the work: `summary` in one line (``ValueError: bad``, or
    why the command could not start), and for an exception the formatted `traceback`."""

    summary: str
    traceback: str | None = None
    cannot_run: bool = False

    @property
    def key(self) -> tuple[bool, str]:
        """What makes two errors "the same": any two commands that cannot start are; two
        exceptions are when their type and message agree."""
        return (True, "") if self.cannot_run else (False, self.summary)
