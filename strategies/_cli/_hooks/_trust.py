"""Where Codex, Gemini CLI and Copilot CLI keep the user's trust, read and (only when the user
asks) recorded exactly as the agents record it themselves.

Codex (0.171.0) runs a hook from a ``hooks.json`` or ``config.toml`` only when it is trusted:
its user config (``$CODEX_HOME/config.toml``, else ``~/.codex/config.toml``) holds, under
``[hooks.state."<file>:<event>:<group>:<handler>"]``, a ``trusted_hash`` equal to the hook's
current hash, and a project's ``.codex`` folder is read at all only when
``[projects."<folder>"]`` has ``trust_level = "trusted"``. The hash is Codex's
``command_hook_hash`` (codex-rs/hooks/src/engine/discovery.rs, through
codex-rs/config/src/fingerprint.rs ``version_for_toml``): the SHA-256 of the compact JSON, keys
sorted, of ``{"event_name": "stop", "hooks": [the handler, normalized]}`` (plus the group's
``matcher`` when it has one), prefixed ``sha256:``. The normalized handler is ``type``,
``command``, ``timeout`` (Codex's default 600 when absent, at least 1), ``async`` (false unless
set) and ``statusMessage`` when set. `tests/real/test_agents_real_hooks.py` holds this against the
real binary's own ``hooks/list``.

Gemini CLI (0.61.0) runs a project's hooks only in a trusted folder: ``trustedFolders.json`` in
``~/.gemini`` (or ``$GEMINI_CLI_TRUSTED_FOLDERS_PATH``) maps a path to ``TRUST_FOLDER`` (that
folder), ``TRUST_PARENT`` (its parent) or ``DO_NOT_TRUST``; the longest matching rule wins.
Untrusted, headless gemini exits 55, and ``--skip-trust`` runs without the project's hooks.

Copilot CLI (1.0.102) loads a repository's hooks only in a folder it trusts: its config file
(``$COPILOT_HOME/config.json``, else ``~/.copilot/config.json``: JSON after two ``//`` comment
lines) lists them under ``trustedFolders`` (older files: ``trusted_folders``, which it renames),
a folder trusting those below it. Untrusted, ``copilot -p`` runs without the hook and says
nothing; ``--trust-folder`` trusts for that session only and records nothing.
`tests/real/test_agents_real_hooks.py` holds this against the real binary.

The TOML is edited as text (no TOML writer is a dependency): a table is added at the end, or a
line in the one table that is ours is replaced; the result is read back with `tomllib` and
written only when it holds exactly what was meant. A file we cannot edit that way is an error
naming the file and the key, and is left as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness import ConfigurationError

from ._files import UnreadableRecord, parse_json, read_text

GEMINI_TRUSTED = ("TRUST_FOLDER", "TRUST_PARENT")
CODEX_DEFAULT_TIMEOUT = 600


def codex_home() -> Path:
    """Codex's home folder: ``$CODEX_HOME``, else ``~/.codex``."""
    home = os.environ.get("CODEX_HOME")
    return Path(home).expanduser() if home else Path.home() / ".codex"


def codex_hook_hash(handler: Mapping[str, Any], matcher: str | None = None) -> str:
    """The hash Codex compares with a hook's ``trusted_hash`` (see the module)."""
    timeout = handler.get("timeout", handler.get("timeoutSec", CODEX_DEFAULT_TIMEOUT))
    normal: dict[str, Any] = {
        "type": "command",
        "command": handler["command"],
        "timeout": max(int(timeout), 1),
        "async": bool(handler.get("async", False)),
    }
    if handler.get("statusMessage") is not None:
        normal["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": "stop", "hooks": [normal]}
    if matcher is not None:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def codex_project_root(folder: Path) -> Path:
    """The project Codex trusts for `folder`: the nearest folder holding ``.git`` (Codex's
    default ``project_root_markers``), else `folder` itself."""
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def codex_hook_key(hooks_file: Path, group: int, handler: int) -> str:
    """The key of a Stop hook's state in Codex's ``hooks.state``."""
    return f"{hooks_file}:stop:{group}:{handler}"


def read_toml(path: Path) -> dict[str, Any]:
    """`path` as TOML; empty when it does not exist; an error naming the file otherwise."""
    text = _text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{path}: not valid TOML ({exc}); it was left as it is") from None


def codex_trusted_hash(config: Mapping[str, Any], key: str) -> str | None:
    """The ``trusted_hash`` recorded for `key` in Codex's parsed config, if any."""
    state = config.get("hooks", {}).get("state", {}) if isinstance(config, dict) else {}
    entry = state.get(key) if isinstance(state, dict) else None
    value = entry.get("trusted_hash") if isinstance(entry, dict) else None
    return value if isinstance(value, str) else None


def codex_hook_disabled(config: Mapping[str, Any], key: str) -> bool:
    """Whether the user turned the hook off in Codex (``enabled = false``)."""
    state = config.get("hooks", {}).get("state", {}) if isinstance(config, dict) else {}
    entry = state.get(key) if isinstance(state, dict) else None
    return isinstance(entry, dict) and entry.get("enabled") is False


def codex_project_trusted(config: Mapping[str, Any], project: Path) -> bool:
    """Whether Codex's parsed config trusts the project folder `project`."""
    projects = config.get("projects", {}) if isinstance(config, dict) else {}
    entry = projects.get(str(project)) if isinstance(projects, dict) else None
    return isinstance(entry, dict) and entry.get("trust_level") == "trusted"


def record_codex_trust(
    config_path: Path, *, key: str, hook_hash: str, project: Path | None
) -> bool:
    """Record the hook `key` as trusted at `hook_hash` (and the `project` as trusted) in
    Codex's user config, as Codex's ``/hooks`` does; whether the file changed."""
    text = _text(config_path)
    edited = _set_in_table(text, ("hooks", "state", key), "trusted_hash", hook_hash, config_path)
    if project is not None:
        edited = _set_in_table(
            edited, ("projects", str(project)), "trust_level", "trusted", config_path
        )
    if edited == text:
        return False
    config = _parsed(edited, config_path)
    if codex_trusted_hash(config, key) != hook_hash or (
        project is not None and not codex_project_trusted(config, project)
    ):
        raise ConfigurationError(
            f"{config_path}: the trust for {key!r} could not be recorded in this file's layout; "
            "it was left as it is (trust the hook in Codex with /hooks)"
        )
    _write(config_path, edited)
    return True


def gemini_trusted_folders_path() -> Path:
    """Gemini CLI's ``trustedFolders.json``."""
    override = os.environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
    return Path(override) if override else Path.home() / ".gemini" / "trustedFolders.json"


def gemini_folder_trust(folder: Path, rules: Mapping[str, Any]) -> bool | None:
    """Gemini CLI's answer for `folder`: True (trusted), False (``DO_NOT_TRUST``), or None
    (no rule: untrusted, and headless gemini exits 55). The longest matching rule wins."""
    where = folder.resolve()
    best: tuple[int, str] | None = None
    for rule, level in rules.items():
        base = Path(rule).expanduser()
        base = base.parent if level == "TRUST_PARENT" else base
        try:
            where.relative_to(base.resolve())
        except ValueError:
            continue
        if best is None or len(rule) > best[0]:
            best = (len(rule), str(level))
    if best is None:
        return None
    if best[1] == "DO_NOT_TRUST":
        return False
    return True if best[1] in GEMINI_TRUSTED else None


def read_gemini_trust(path: Path) -> dict[str, Any]:
    """Gemini CLI's trusted folders; empty when the file does not exist."""
    text = _text(path)
    try:
        data = parse_json(text, path) if text.strip() else {}
    except UnreadableRecord as exc:
        raise ConfigurationError(f"{exc}; it was left as it is") from None
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path}: must hold a JSON object; it was left as it is")
    return data


def record_gemini_trust(folder: Path) -> tuple[Path, bool]:
    """Trust `folder` in Gemini CLI (``TRUST_FOLDER``), as its trust dialog does; the file and
    whether it changed."""
    path = gemini_trusted_folders_path()
    rules = read_gemini_trust(path)
    key = str(folder.resolve())
    if rules.get(key) == "TRUST_FOLDER":
        return path, False
    rules[key] = "TRUST_FOLDER"
    _write(path, json.dumps(rules, indent=2) + "\n")
    return path, True


def copilot_config_path() -> Path:
    """GitHub Copilot CLI's own config file: ``$COPILOT_HOME/config.json``, else
    ``~/.copilot/config.json``."""
    home = os.environ.get("COPILOT_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".copilot") / "config.json"


def read_copilot_config(path: Path) -> dict[str, Any]:
    """Copilot CLI's config (JSON after ``//`` comment lines); empty when it does not exist;
    an error naming the file otherwise (it is then left as it is)."""
    try:
        text = read_text(path)
    except UnreadableRecord as exc:
        raise ConfigurationError(f"cannot read {exc}; it was left as it is") from None
    body = "\n".join(line for line in (text or "").splitlines() if not _comment(line))
    if not body.strip():
        return {}
    try:
        data = parse_json(body, path)
    except UnreadableRecord as exc:
        raise ConfigurationError(f"{exc}; it was left as it is") from None
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path}: must hold a JSON object; it was left as it is")
    return data


def copilot_folder_trusted(folder: Path, config: Mapping[str, Any]) -> bool:
    """Whether Copilot CLI trusts `folder`: it or a folder above it is in ``trustedFolders``
    (``trusted_folders`` in older files, which Copilot renames when it writes)."""
    listed = [
        *_strings(config.get("trustedFolders")),
        *_strings(config.get("trusted_folders")),
    ]
    folder = folder.resolve()
    return any(folder == Path(entry) or folder.is_relative_to(Path(entry)) for entry in listed)


def record_copilot_trust(folder: Path) -> tuple[Path, bool]:
    """Trust `folder` in Copilot CLI, as its folder-trust prompt's "this and future sessions"
    does (``trustedFolders`` in its config.json, its other keys kept); the file and whether it
    changed."""
    path = copilot_config_path()
    config = read_copilot_config(path)
    if copilot_folder_trusted(folder, config):
        return path, False
    listed = [
        *_strings(config.pop("trusted_folders", None)),
        *_strings(config.get("trustedFolders")),
    ]
    config["trustedFolders"] = [*dict.fromkeys([*listed, str(folder.resolve())])]
    _write(path, COPILOT_HEADER + json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    return path, True


# The lines Copilot CLI writes at the top of its config.json.
COPILOT_HEADER = (
    "// User settings belong in settings.json.\n// This file is managed automatically.\n"
)


def _comment(line: str) -> bool:
    return line.lstrip().startswith("//")


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _text(path: Path) -> str:
    """The file's text through the bounded reader; empty when it does not exist."""
    try:
        return read_text(path) or ""
    except UnreadableRecord as exc:
        raise ConfigurationError(f"cannot read {exc}; it was left as it is") from None


def _parsed(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{path}: not valid TOML ({exc}); it was left as it is") from None


def _quoted(key: str) -> str:
    """A TOML key: bare when it can be, else a basic string."""
    if re.fullmatch(r"[A-Za-z0-9_-]+", key):
        return key
    return json.dumps(key, ensure_ascii=False)


def _set_in_table(text: str, table: tuple[str, ...], key: str, value: str, path: Path) -> str:
    """`text` with ``key = "value"`` in the table `table`: the line replaced in that table's
    own header section, else a new section appended. Unchanged when it already holds it."""
    config = _parsed(text, path)
    node: Any = config
    for part in table:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict) and node.get(key) == value:
        return text
    header = "[" + ".".join(_quoted(part) for part in table) + "]"
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _header_key(line) == table), None)
    assignment = f"{_quoted(key)} = {json.dumps(value, ensure_ascii=False)}\n"
    if start is None:
        if node is not None:
            raise ConfigurationError(
                f"{path}: {'.'.join(table)!r} is written in a form this command does not edit; "
                "it was left as it is"
            )
        if not text or text.endswith("\n\n"):
            prefix = ""
        else:
            prefix = "\n" if text.endswith("\n") else "\n\n"
        return text + prefix + header + "\n" + assignment
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
        len(lines),
    )
    for i in range(start + 1, end):
        name = lines[i].split("=", 1)[0].strip()
        if "=" in lines[i] and name in (key, json.dumps(key)):
            lines[i] = assignment
            return "".join(lines)
    body_end = end
    while body_end > start + 1 and not lines[body_end - 1].strip():
        body_end -= 1
    if body_end > 0 and not lines[body_end - 1].endswith("\n"):
        lines[body_end - 1] += "\n"
    lines.insert(body_end, assignment)
    return "".join(lines)


def _header_key(line: str) -> tuple[str, ...] | None:
    """The table a ``[table]`` header line opens (read by `tomllib` itself), else None."""
    stripped = line.strip()
    if not stripped.startswith("[") or stripped.startswith("[["):
        return None
    try:
        node: Any = tomllib.loads(stripped)
    except tomllib.TOMLDecodeError:
        return None
    parts: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        [(name, node)] = node.items()
        parts.append(name)
    return tuple(parts) if node == {} else None


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
