"""`Loop`: the plain strategy, one session whose check reasons are injected until it passes."""

from __future__ import annotations

from harness.extend import SingleSession


class Loop(SingleSession):
    """One session; each rejected claim of done puts the check's reason into the next turn."""

    name = "loop"

    def __repr__(self) -> str:
        return "Loop()"
