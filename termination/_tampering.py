"""`TamperingSensor`: the agent keeps changing the files that judge its work."""

from __future__ import annotations

from attrs import frozen

from harness import SessionStateSnapshot
from harness.extend import SensorReading

from ._sensors import Action, _threshold, check_action, check_name, graded


@frozen
class TamperingSensor:
    """Trips when `limit` claims of the run found protected paths changed.

    Each claim that finds the policy's `protected` paths changed is rejected anyway; this
    stops a run whose agent answers each rejection by tampering again instead of fixing the
    work. It reads `snapshot.tampered_claims`, which the run counts over all its sessions:
    in the plain loop on the turn of the claim, before the check runs; in Ralph, whose claims
    are judged between iterations, on the next iteration's first turn.
    """

    limit: int = 3
    warn_at: int | None = None
    name: str = "tampering"
    action: Action = "halt"

    def __attrs_post_init__(self) -> None:
        _threshold("TamperingSensor", self.limit, self.warn_at, minimum=1)
        check_action("TamperingSensor", self.action)
        check_name("TamperingSensor", self.name)

    def read(self, snapshot: SessionStateSnapshot) -> SensorReading:
        count = snapshot.tampered_claims
        return graded(
            count,
            limit=self.limit,
            warn_at=self.warn_at,
            action=self.action,
            halt=lambda: (
                f"{count} claims of done found protected files changed "
                f"(this time: {', '.join(str(t) for t in snapshot.tampering) or 'none'})"
            ),
            warn=lambda: (
                f"{count} of your claims found protected files changed. They judge the work "
                "and are judged as they were when the run started: restore them and fix the "
                "code instead."
            ),
        )
