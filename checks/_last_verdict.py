"""What a test suite's last whole run found, as data: the fast half's memory between processes.

`TestSuiteCheck` keeps it per run, in memory, for its next claim's fast half (the tests that
failed then run first). The stop hooks, a fresh process at every stop, store it in the
session's record after each stop and hand it back at the next (`KeepsLastVerdict`).
"""

from __future__ import annotations

from attrs import frozen


@frozen
class LastVerdict:
    """The last whole run of the suite `command` (as the check shows it): the tests that
    failed, and every test its listing named (empty when the output could not be read into
    names). A passing run failed none."""

    command: str
    failing: tuple[str, ...]
    names: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"command": self.command, "failing": list(self.failing), "names": list(self.names)}

    @classmethod
    def from_json(cls, data: object) -> LastVerdict:
        """Read what `to_json` wrote; a `ValueError` names what is wrong."""
        if not isinstance(data, dict) or not isinstance(data.get("command"), str):
            raise ValueError("a last verdict needs a 'command' string")
        return cls(data["command"], _names(data, "failing"), _names(data, "names"))


def _names(data: dict[str, object], key: str) -> tuple[str, ...]:
    value = data.get(key)
    if not isinstance(value, list) or not all(isinstance(n, str) and n for n in value):
        raise ValueError(f"{key!r} must be a list of test names (got {value!r:.80})")
    return tuple(value)
