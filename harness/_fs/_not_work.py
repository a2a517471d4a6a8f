"""The folders that are not work: one list for every part that walks a workspace.

What a tool, a test run or a package manager leaves in a workspace is not what the agent did:
version control's own folders, the caches of Python's tools, virtual environments, installed
JavaScript packages and Rust's or Maven's build output. Checkpoint snapshots skip these folders
(and a restore leaves them alone), the workspace scanner of the sensors and feedback providers
ignores them, the baseline cache leaves them out of its key, `search_files` does not search
them, and best-of never counts a file inside one as an attempt's change, in copies and
worktrees alike.

Left out on purpose: ``build`` and ``dist``, which as many projects use for source (build
scripts, a distributable they commit) as for output; a folder hidden by a rule of what is not
work would be lost from a checkpoint and from a best-of winner.
"""

from __future__ import annotations

NOT_WORK: frozenset[str] = frozenset(
    {
        # version control
        ".git",
        ".hg",
        ".svn",
        # tools' caches
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".hypothesis",
        ".tox",
        ".nox",
        # environments and installed dependencies
        ".venv",
        "venv",
        "node_modules",
        # build output (Rust's cargo, Maven)
        "target",
    }
)
"""Folder names that are not work, wherever they are in a workspace."""


def is_work(path: str) -> bool:
    """Whether the workspace-relative `path` (``/`` separators) lies outside every folder of
    `NOT_WORK`."""
    return NOT_WORK.isdisjoint(path.split("/")[:-1])
