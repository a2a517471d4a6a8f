"""Paths inside a workspace: nothing the agent names may resolve outside it."""

from __future__ import annotations

from pathlib import Path


class WorkspaceEscape(ValueError):
    """A path would resolve outside the workspace."""


def resolve_in_workspace(workspace: Path, relative: str | Path) -> Path:
    """Resolve `relative` against `workspace`, refusing anything that leaves it.

    Absolute paths, ``..`` segments and symlinks that point outside are all refused.
    """
    root = workspace.resolve()
    candidate = (root / relative).resolve()
    if candidate != root and root not in candidate.parents:
        raise WorkspaceEscape(f"path {str(relative)!r} is outside the workspace {str(root)!r}")
    return candidate
