"""`harness hook install --agent NAME`: the agent's stop-hook configuration, merged in place.

Each agent keeps its hooks in one JSON file, in a project or for the user:

=======  ============================  ===========================  ======================
agent    project file                  user file                    event (timeout unit)
=======  ============================  ===========================  ======================
claude   ``.claude/settings.json``     ``~/.claude/settings.json``  ``Stop`` (seconds)
codex    ``.codex/hooks.json``         ``~/.codex/hooks.json``      ``Stop`` (seconds)
gemini   ``.gemini/settings.json``     ``~/.gemini/settings.json``  ``AfterAgent`` (ms)
cursor   ``.cursor/hooks.json``        ``~/.cursor/hooks.json``     ``stop`` (seconds)
=======  ============================  ===========================  ======================

The entry is merged into what is there: every other key, event and hook is kept as it was.
The same hook on the same spec already present is updated in place (so a second install is a
no-op, and one with other options changes only that entry, never adding a second). A file
that is not a JSON object, or whose ``hooks`` is not what the agent expects, is an error
naming the file and the key; it is never overwritten.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
from pathlib import Path
from typing import Any, Literal

from attrs import frozen

from harness import ConfigurationError

from ._args import AGENTS, DEFAULT_MAX_BLOCKS, DEFAULT_TIME_LIMIT

Scope = Literal["project", "user"]
# The hook's "timeout" written out: the hook's own --timeout plus a margin for starting and
# answering, so the agent never kills a hook that is about to answer.
MARGIN = 10.0


@frozen
class Installed:
    """The outcome: the file, its merged content, and whether anything changed."""

    path: Path
    content: dict[str, Any]
    changed: bool

    def text(self) -> str:
        return json.dumps(self.content, indent=2, ensure_ascii=False) + "\n"


def hook_command(
    agent: str,
    spec: Path,
    *,
    executable: str = "harness",
    max_blocks: int = DEFAULT_MAX_BLOCKS,
    time_limit: float = DEFAULT_TIME_LIMIT,
) -> str:
    """The shell command the agent runs: the stop hook for `agent` on the spec `spec`."""
    _check_agent(agent)
    argv = [
        *shlex.split(executable),
        "hook",
        f"{agent}-stop",
        "--spec",
        str(spec.expanduser().resolve()),
        "--max-blocks",
        str(max_blocks),
        "--timeout",
        f"{time_limit:g}",
    ]
    return shlex.join(argv)


def config_path(agent: str, scope: Scope, project: Path) -> Path:
    """Where `agent` reads its hooks: in `project`, or in the user's home folder."""
    _check_agent(agent)
    base = project if scope == "project" else Path.home()
    name = "hooks.json" if agent in ("codex", "cursor") else "settings.json"
    return base / f".{agent}" / name


def merge_hook(
    agent: str,
    config: dict[str, Any],
    command: str,
    *,
    where: str,
    max_blocks: int = DEFAULT_MAX_BLOCKS,
    time_limit: float = DEFAULT_TIME_LIMIT,
) -> tuple[dict[str, Any], bool]:
    """`config` with the stop hook running `command` added or updated; and whether it changed.

    `where` names the file in errors. The input is never changed.
    """
    _check_agent(agent)
    merged = copy.deepcopy(config)
    timeout: float | int = time_limit + MARGIN
    if agent == "gemini":  # Gemini CLI's hook timeout is in milliseconds
        timeout = round(timeout * 1000)
    elif float(timeout).is_integer():
        timeout = int(timeout)
    entry: dict[str, Any] = {"command": command, "timeout": timeout}
    if agent == "cursor":
        version = merged.setdefault("version", 1)
        if version != 1:
            raise ConfigurationError(f"{where}: 'version' must be 1 (got {version!r})")
        entry["loop_limit"] = max_blocks
        lists = [_list(_table(merged, "hooks", where), "stop", f"{where}: hooks")]
    else:
        entry = {"type": "command", **entry}
        if agent == "gemini":
            entry["name"] = "harness-verify"
        lists = _group_lists(merged, "AfterAgent" if agent == "gemini" else "Stop", where)
    ours = _hook_key(command)
    for entries in lists:
        for existing in entries:
            if isinstance(existing, dict) and _hook_key(existing.get("command")) == ours:
                existing.update(entry)  # the same hook on the same spec: new options
                return (merged, True) if merged != config else (config, False)
    if agent == "cursor":
        lists[0].append(entry)
    else:
        _list(merged["hooks"], "AfterAgent" if agent == "gemini" else "Stop", where).append(
            {"hooks": [entry]}
        )
    return merged, True


def _group_lists(config: dict[str, Any], event: str, where: str) -> list[list[Any]]:
    """The ``hooks`` list of every matcher group under ``hooks.EVENT``."""
    groups = _list(_table(config, "hooks", where), event, f"{where}: hooks")
    lists = []
    for index, group in enumerate(groups):
        if not isinstance(group, dict):
            raise ConfigurationError(f"{where}: hooks.{event}[{index}] must be an object")
        entries = group.get("hooks", [])
        if not isinstance(entries, list):
            raise ConfigurationError(f"{where}: hooks.{event}[{index}].hooks must be a list")
        lists.append(entries)
    return lists


def _hook_key(command: object) -> tuple[str, str] | None:
    """``(AGENT-stop, spec)`` when `command` runs one of these hooks, else None: a re-install
    on the same spec updates that entry instead of adding a second one."""
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:  # not shell words we can read: someone else's command
        return None
    for i in range(len(words) - 1):
        if words[i] == "hook" and words[i + 1].endswith("-stop"):
            rest = words[i + 2 :]
            spec = rest[rest.index("--spec") + 1] if "--spec" in rest[:-1] else ""
            return words[i + 1], spec
    return None


def install_hook(
    agent: str,
    spec: Path,
    *,
    scope: Scope = "project",
    project: Path | None = None,
    executable: str = "harness",
    max_blocks: int = DEFAULT_MAX_BLOCKS,
    time_limit: float = DEFAULT_TIME_LIMIT,
    dry_run: bool = False,
) -> Installed:
    """Merge the stop hook for `agent` into its configuration file (unless `dry_run`)."""
    folder = (project or Path.cwd()).expanduser()
    if scope == "project" and not folder.is_dir():
        raise ConfigurationError(f"the project {str(folder)!r} is not an existing folder")
    path = config_path(agent, scope, folder)
    existing = _read(path)
    command = hook_command(
        agent, spec, executable=executable, max_blocks=max_blocks, time_limit=time_limit
    )
    merged, changed = merge_hook(
        agent,
        existing,
        command,
        where=str(path),
        max_blocks=max_blocks,
        time_limit=time_limit,
    )
    result = Installed(path, merged, changed)
    if changed and not dry_run:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(result.text(), encoding="utf-8")
        os.replace(temporary, path)
    return result


def _read(path: Path) -> dict[str, Any]:
    """The file's JSON object; an empty object if the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read {str(path)!r}: {exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigurationError(
            f"{path}: not valid JSON ({exc}); fix or move it, it was left as it is"
        ) from None
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"{path}: must hold a JSON object (got {type(data).__name__}); it was left as it is"
        )
    return data


def _table(config: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = config.setdefault(key, {})
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where}: {key!r} must be an object (got {value!r:.60})")
    return value


def _list(table: dict[str, Any], key: str, where: str) -> list[Any]:
    value = table.setdefault(key, [])
    if not isinstance(value, list):
        raise ConfigurationError(f"{where}.{key} must be a list (got {value!r:.60})")
    return value


def _check_agent(agent: str) -> None:
    if agent not in AGENTS:
        raise ConfigurationError(f"'agent' must be one of {AGENTS} (got {agent!r})")
