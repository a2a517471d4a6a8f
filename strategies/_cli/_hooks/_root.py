"""One project root for a stop, whatever folder the agent started in.

The hook judges the project root: the folder holding the spec when ``--spec`` is a path
relative to it (the form a committed hook writes), else the repository around the agent's
folder. A relative spec is looked for from the agent's own project variable (Claude Code's
``$CLAUDE_PROJECT_DIR``, Gemini CLI's ``$GEMINI_PROJECT_DIR``, Qwen Code's ``$QWEN_PROJECT_DIR``,
Cursor's ``$CURSOR_PROJECT_DIR``), then the payload's folder, then the hook's own working
folder, each walked up to the repository's root (the nearest folder holding ``.git``) and never
above it: the nearest folder holding the spec is the root. So a hook committed with
``--spec checks.toml`` finds the spec in any clone, at any path, from any subfolder. A relative
spec that climbs (``../checks.toml``, typed in a subfolder) is no path from a project root: it
is read from the hook's working folder, as any command-line path is, and the root is found as
for an absolute spec.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from attrs import frozen

from ._files import UnreadableRecord, read_text

# The variable each agent sets to its project folder when it runs a hook.
ROOT_VARIABLES: dict[str, tuple[str, ...]] = {
    "claude": ("CLAUDE_PROJECT_DIR",),
    "gemini": ("GEMINI_PROJECT_DIR",),
    "qwen": ("QWEN_PROJECT_DIR",),
    "cursor": ("CURSOR_PROJECT_DIR",),
    "codex": (),
    "copilot": (),
}


class SpecNotFound(ValueError):
    """A relative ``--spec`` found in no folder from the agent's up to the repository's root."""


@frozen
class Located:
    """The spec to load and the project root the checks judge."""

    spec: Path
    root: Path | None


def locate(
    spec: Path,
    agent: str,
    cwd: Path | None,
    *,
    env: Mapping[str, str] | None = None,
    here: Path | None = None,
) -> Located:
    """Where the spec is, and the project root (see the module). `cwd` is the payload's
    folder, `here` the hook's own working folder (the process's, by default)."""
    env = os.environ if env is None else env
    named = Path(os.path.expandvars(str(spec))).expanduser()
    if ".." in named.parts:  # typed in a subfolder: a command-line path like any other
        named = (here if here is not None else Path.cwd()) / named
    if named.is_absolute():
        return Located(named, repository_root(cwd) if cwd is not None else None)
    starts = [Path(env[v]) for v in ROOT_VARIABLES.get(agent, ()) if env.get(v)]
    starts += [p for p in (cwd, here if here is not None else Path.cwd()) if p is not None]
    tried: list[str] = []
    for start in _unique(starts):
        for folder in _upwards(start):
            if (folder / named).is_file():
                return Located(folder / named, folder)
        tried.append(str(start))
    raise SpecNotFound(
        f"no spec {str(named)!r} in {' or '.join(repr(t) for t in tried)} or any folder above "
        "up to the repository's root (a relative --spec names a file in the project root)"
    )


def repository_root(folder: Path) -> Path:
    """The nearest folder at or above `folder` holding ``.git``, else `folder` itself."""
    for candidate in _upwards(folder):
        if (candidate / ".git").exists():
            return candidate
    return folder


def _upwards(start: Path) -> Iterable[Path]:
    """`start` and each folder above it, up to the first holding ``.git`` (included), or up
    to the filesystem's root when none does."""
    start = start.expanduser().absolute()
    for folder in (start, *start.parents):
        yield folder
        if (folder / ".git").exists():
            return


def _unique(paths: list[Path]) -> list[Path]:
    seen: set[Path] = set()
    out = []
    for path in paths:
        key = path.expanduser().absolute()
        if key not in seen:
            seen.add(key)
            out.append(path)
    return out


# Where each agent that reads only its working folder's settings keeps a project's hooks.
OWN_SETTINGS = {
    "claude": ".claude/settings.json",
    "gemini": ".gemini/settings.json",
    "qwen": ".qwen/settings.json",
}


def has_own_hook(agent: str, folder: Path | None) -> bool:
    """Whether `folder`'s own settings for `agent` hold a harness stop hook (a user-scope
    ``--walk-up`` hook leaves such a folder's stops to that hook, so none is checked twice)."""
    name = OWN_SETTINGS.get(agent)
    if folder is None or name is None:
        return False
    try:
        text = read_text(folder / name)
    except UnreadableRecord:
        return False
    return text is not None and f"{agent}-stop" in text and " hook " in text
