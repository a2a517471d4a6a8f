"""Protected paths: the files that judge the work, as glob rules.

`ProtectedPaths` holds glob rules relative to the workspace, matched against each path
written with ``/``:

- ``*`` and ``?`` match within one folder name, ``[...]`` is a character class;
- ``**`` as a whole part matches any number of folders, none included (``tests/**``,
  ``**/conftest.py``);
- a rule without wildcards names a file or a folder, and a folder covers everything in it
  (``feature_list.json``, ``tests``); a trailing ``/`` says the same as ``/**``;
- ``*.py`` matches at the top of the workspace only: write ``**/*.py`` for every folder.

Folders named in `ProtectedPaths.ignore` (``__pycache__`` and ``.pytest_cache`` by default:
caches an agent's own test run writes beside the tests) are skipped. A change to a protected
path is a `Tampering`. Recording the paths when a run starts, comparing and restoring them is
`PathGuard`'s work, in `_path_guard` (loaded only by a run that protects paths).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Literal

from attrs import field, frozen

from ._errors import ConfigurationError

Change = Literal["modified", "deleted", "added", "replaced"]
# Caches a test run writes beside the tests: never compared. The checks' commands never read
# the workspace's Python bytecode caches (`checks` points PYTHONPYCACHEPREFIX elsewhere and
# holds nothing of the workspace there), so nothing planted there can stand in for a test.
DEFAULT_IGNORE = ("__pycache__", ".pytest_cache")
_WILD = re.compile(r"[*?\[]")


def _rules(value: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    rules = tuple(value)
    for rule in rules:
        if not isinstance(rule, str) or not rule.strip("/ "):
            raise ConfigurationError(f"'protected' rules must be non-empty strings (got {rule!r})")
        parts = PurePosixPath(rule).parts
        if rule.startswith("/") or ".." in parts or "\\" in rule:
            raise ConfigurationError(
                f"'protected' rules are relative to the workspace and may not leave it "
                f"(got {rule!r})"
            )
    return rules


def _segment(part: str) -> str:
    """One folder name's glob as a regular expression that never crosses ``/``."""
    out: list[str] = []
    i = 0
    while i < len(part):
        char = part[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := part.find("]", i + 2)) != -1:
            body = part[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = re.escape(body[1:] if negate else body).replace(r"\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _compile(rule: str) -> tuple[re.Pattern[str], str]:
    """The rule's pattern (matched against a path with ``/`` appended) and the folder below
    which every match lies (the parts before the first wildcard)."""
    parts = [p for p in rule.split("/") if p not in ("", ".")]
    if rule.endswith("/") or not any(_WILD.search(p) for p in parts):
        parts.append("**")
    regex = "".join("(?:[^/]+/)*" if p == "**" else f"{_segment(p)}/" for p in parts)
    base: list[str] = []
    for part in parts:
        if part == "**" or _WILD.search(part):
            break
        base.append(part)
    return re.compile(regex), "/".join(base)


@frozen
class ProtectedPaths:
    """Glob rules naming the files the agent may not change (see the module's rules)."""

    rules: tuple[str, ...] = field(default=(), converter=_rules)
    ignore: tuple[str, ...] = field(default=DEFAULT_IGNORE, converter=tuple)
    """Folder names whose contents are never recorded or compared (caches)."""
    _compiled: tuple[tuple[str, re.Pattern[str], str], ...] = field(
        init=False, eq=False, repr=False
    )

    def __attrs_post_init__(self) -> None:
        compiled = tuple((rule, *_compile(rule)) for rule in self.rules)
        object.__setattr__(self, "_compiled", compiled)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def rule_for(self, relative: str | PurePosixPath) -> str | None:
        """The first rule that covers `relative` (a workspace path with ``/``), or None."""
        text = str(relative).strip("/")
        if text in ("", "."):
            return None
        for rule, pattern, _ in self._compiled:
            if pattern.fullmatch(f"{text}/"):
                return rule
        return None

    def bases(self) -> tuple[str, ...]:
        """The folders (relative, ``""`` for the root) under which the rules can match."""
        return tuple(dict.fromkeys(base for _, _, base in self._compiled))


@frozen
class Tampering:
    """A protected path changed since the run started, and the rule that protects it."""

    path: str
    change: Change
    rule: str

    def __str__(self) -> str:
        return f"{self.path} ({self.change}; protected by {self.rule!r})"

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "change": self.change, "rule": self.rule}
