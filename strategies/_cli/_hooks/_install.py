"""`harness hook install --agent NAME`: the agent's stop-hook configuration, merged in place.

Each agent keeps its hooks in one JSON file, in a project or for the user:

=======  ==============================  ===========================  ======================
agent    project file                    user file                    event (timeout unit)
=======  ==============================  ===========================  ======================
claude   ``.claude/settings.json``       ``~/.claude/settings.json``  ``Stop`` (seconds)
codex    ``.codex/hooks.json``           ``$CODEX_HOME/hooks.json``   ``Stop`` (seconds)
gemini   ``.gemini/settings.json``       ``~/.gemini/settings.json``  ``AfterAgent`` (ms)
cursor   ``.cursor/hooks.json``          ``~/.cursor/hooks.json``     ``stop`` (seconds)
qwen     ``.qwen/settings.json``         ``~/.qwen/settings.json``    ``Stop`` (ms)
copilot  ``.github/hooks/harness.json``  (none)                       ``agentStop`` (seconds)
=======  ==============================  ===========================  ======================

The entry is merged into what is there: every other key, event and hook is kept as it was.
The same hook on the same spec already present is updated in place (so a second install is a
no-op, and one with other options changes only that entry, never adding a second). A file
that is not a JSON object, or whose ``hooks`` is not what the agent expects, is an error
naming the file and the key; it is never overwritten.

The command needs no PATH: by default it is this harness's own absolute entry point (the
console script beside the running interpreter, else the interpreter with ``-m strategies``);
``--executable`` is written as given, so a committed file can say
``"$CLAUDE_PROJECT_DIR"/.venv/bin/harness``.

The command guards its entry point (`guarded`): when it cannot start, the agent's shell records
the unchecked stop itself. With Claude Code's stop hook the install also writes a
``SessionStart`` self-test (`session_check_command`) that warns the model at once.

Trust (`_trust`): Codex runs a hook only once the user trusted it, and a project's hooks
only in a trusted project; Gemini CLI runs a project's hooks only in a trusted folder. The
install records that trust only with ``trust=True`` (the user's consent), the way the agent
records it itself; otherwise `Installed.notes` says what is missing and the one command that
records it. A Codex hook that was trusted keeps its trust through a reinstall with other options
(the user trusted this hook; the note says the trust was carried over).
"""

from __future__ import annotations

import copy
import json
import math
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Literal

from attrs import frozen

from harness import ConfigurationError

from . import _trust as trust
from ._args import AGENTS, DEFAULT_MAX_BLOCKS, DEFAULT_TIME_LIMIT
from ._files import UnreadableRecord, parse_json, read_text
from ._ledger import NOT_STARTED

Scope = Literal["project", "user"]
# The hook's "timeout" written out: the hook's own --timeout plus a margin for starting and
# answering, so the agent never kills a hook that is about to answer.
MARGIN = 10.0
# The agents whose hook "timeout" is in milliseconds (Qwen Code's runner passes it straight to
# setTimeout: a Claude-shaped 60 would kill the hook after 60 ms).
MILLISECONDS = ("gemini", "qwen")
# The stop event each agent's file names (Cursor and Copilot keep a flat list under it).
EVENTS = {
    "claude": "Stop",
    "codex": "Stop",
    "gemini": "AfterAgent",
    "cursor": "stop",
    "qwen": "Stop",
    "copilot": "agentStop",
}


@frozen
class Installed:
    """The outcome: the file, its merged content, whether anything changed, and what the user
    must still do (or was done beside the file: trust recorded) for the hook to run."""

    path: Path
    content: dict[str, Any]
    changed: bool
    notes: tuple[str, ...] = ()

    def text(self) -> str:
        return json.dumps(self.content, indent=2, ensure_ascii=False) + "\n"


def default_executable() -> str:
    """This harness's absolute entry point, which the agent can start without any PATH: the
    ``harness`` script beside the running interpreter, else the interpreter with
    ``-m strategies``."""
    interpreter = Path(sys.executable).absolute()
    script = interpreter.parent / "harness"
    if script.is_file() and os.access(script, os.X_OK):
        return shlex.quote(str(script))
    return shlex.join([str(interpreter), "-m", "strategies"])


def hook_command(
    agent: str,
    spec: Path,
    *,
    executable: str | None = None,
    max_blocks: int = DEFAULT_MAX_BLOCKS,
    time_limit: float = DEFAULT_TIME_LIMIT,
    observe: bool = False,
    committed: bool = False,
    walk_up: bool = False,
) -> str:
    """The shell command the agent runs: the stop hook for `agent` on the spec `spec`.

    `executable` is written as given (shell words: a ``$VAR`` in it is expanded by the agent's
    shell); by default `default_executable`. With `committed`, `spec` is written as given (a
    path relative to the project root, which the hook finds from any folder of a clone).

    An entry point that is one shell word (every one the install writes, and an `executable`
    of one word) is guarded (`guarded`): when it cannot start, the shell itself records the
    unchecked stop and says so on stderr.
    """
    _check_agent(agent)
    written = spec.as_posix() if committed else str(spec.expanduser().resolve())
    argv = [
        "hook",
        f"{agent}-stop",
        "--spec",
        written,
        "--max-blocks",
        str(max_blocks),
        "--timeout",
        f"{time_limit:g}",
        *(["--observe"] if observe else []),
        *(["--walk-up"] if walk_up else []),
    ]
    start = default_executable() if executable is None else executable.strip()
    if not start:
        raise ConfigurationError("'executable' must not be empty")
    entry = entry_point(start)
    if entry is None:  # several shell words of the user's: written as given, unguarded
        return f"{start} {shlex.join(argv)}"
    return guarded(agent, entry, shlex.join(argv), mode="observe" if observe else "enforce")


@frozen
class EntryPoint:
    """The program a hook command starts: `word`, one shell word (it may hold ``$VAR`` or
    ``$(...)``, expanded by the agent's shell), then `arguments` (``-m strategies``);
    `interpreter` is the interpreter's name beside a console script, when the install knows
    it (a venv's ``python``: a venv whose interpreter is gone cannot start its scripts)."""

    word: str
    arguments: str = ""
    interpreter: str | None = None


def entry_point(start: str) -> EntryPoint | None:
    """The entry point of the shell words `start`: the one the install writes (`start` is
    `default_executable`'s, or `committed_executable`'s), or one word given as --executable;
    None for several words of the user's (``uv run harness``), which are not guarded."""
    try:
        words = shlex.split(start)
    except ValueError:
        return None
    installed = default_executable()
    if not words or "/" not in words[0]:  # a name found on PATH: the agent's shell says 127
        return None
    if start == installed or (len(words) in (1, 3) and words[1:] in ([], ["-m", "strategies"])):
        word = start.removesuffix(" -m strategies") if len(words) == 3 else start
        if len(words) == 3:
            return EntryPoint(word, "-m strategies")
        interpreter = _interpreter_beside(words[0], installed)
        return EntryPoint(word, interpreter=interpreter)
    return None


def _interpreter_beside(script: str, installed: str) -> str | None:
    """The name of this harness's interpreter when `script` is this harness's console script
    (written absolute, or from the project root, the same path inside it): a venv's scripts
    start only while its interpreter is there. None for any other script (a ``~/.local/bin``
    link has no interpreter beside it)."""
    ours = shlex.split(installed)
    if len(ours) != 1:
        return None
    tail = script.partition("/")[2]  # a committed one: $ROOT/.venv/bin/harness
    if script == ours[0] or (script.startswith("$") and tail and ours[0].endswith("/" + tail)):
        return Path(sys.executable).name
    return None


def guarded(agent: str, entry: EntryPoint, arguments: str, *, mode: str) -> str:
    """``h=ENTRY; [ -x "$h" ] || { record; tell; exit 1; }; exec "$h" ARGS``: the hook started
    by the agent's shell, which first checks that the entry point (and the interpreter beside
    a console script) can run. When not (a removed venv, a moved checkout), the shell appends
    an unchecked stop to the verdicts file (``$XDG_STATE_HOME/harness/stop-hook``), says so on
    stderr and exits 1, a non-blocking error to every agent: the stop goes through, as for a
    payload that cannot be read, since a shell keeps no block count to bound a block with.
    Nothing of the payload is read: no text of the agent's reaches the record or the shell."""
    test = '[ -x "$h" ]'
    if entry.interpreter is not None:
        test += f' && [ -x "${{h%/*}}"/{shlex.quote(entry.interpreter)} ]'
    why = (
        f"{NOT_STARTED}: %s cannot be run (a removed venv or a moved checkout?): the stop went "
        f"through unchecked; recreate the venv, or run harness hook install --agent {agent} again"
    )
    record = {
        "agent": agent,
        "session_id": "unknown",
        "mode": mode,
        "outcome": "error",
        "would_block": True,
        "blocked": False,
        "blocks": 0,
        "checks": 0,
        "failed": [],
        "error": why,
    }
    # The line is '{"at":' NOW ',"agent":...,"error":"...ENTRY..."}': the entry point as the
    # shell expanded it, with any quote, backslash or control character dropped.
    line = json.dumps(record, separators=(",", ":"))
    before, after = line.split("%s")
    fallback = (
        'd="${XDG_STATE_HOME:-$HOME/.local/state}/harness/stop-hook"; '
        'p=$(printf %s "$h" | tr -d \'"\\\\\\000-\\037\'); '
        'mkdir -p "$d" && printf \'%s%s,%s%s%s\\n\' \'{"at":\' "$(date +%s)" '
        f'{shlex.quote(before[1:])} "$p" {shlex.quote(after)} >>"$d"/verdicts.jsonl; '
        f"printf {shlex.quote('harness hook: ' + why + chr(92) + 'n')} "
        '"$p" >&2; exit 1'
    )
    arguments = f"{entry.arguments} {arguments}".strip()
    return f'h={entry.word}; {test} || {{ {fallback}; }}; exec "$h" {arguments}'


# How a committed hook names the project root at run time, per agent: the agent's own variable
# where it sets one to the folder whose settings it read (Claude Code, Gemini CLI), else the
# repository's root as git reports it from the folder the agent runs the hook in.
ROOT_EXPRESSIONS = {
    "claude": '"$CLAUDE_PROJECT_DIR"',
    "gemini": '"$GEMINI_PROJECT_DIR"',
    "codex": '"$(git rev-parse --show-toplevel)"',
    "qwen": '"$(git rev-parse --show-toplevel)"',
    "cursor": '"$(git rev-parse --show-toplevel)"',
    "copilot": '"$(git rev-parse --show-toplevel)"',
}


def committed_spec(spec: Path, project: Path) -> Path:
    """`spec` relative to the project root (a relative `spec` is read from the project root,
    else from the current folder); an error when it is outside the project."""
    named = spec.expanduser()
    if not named.is_absolute():
        named = project / named if (project / named).exists() else named.absolute()
    try:
        return named.resolve().relative_to(project)
    except ValueError:
        raise ConfigurationError(
            f"the spec {str(named)!r} is outside the project {str(project)!r}: a committed "
            "hook can only name a spec the repository holds"
        ) from None


def committed_executable(agent: str, project: Path) -> str:
    """This harness's entry point written for a committed file: relative to the project root
    named the agent's way at run time (`ROOT_EXPRESSIONS`)."""
    entry = Path(shlex.split(default_executable())[0])
    try:
        inside = entry.relative_to(project)
    except ValueError:
        raise ConfigurationError(
            f"a committed hook starts harness from the project, and this harness ({entry}) is "
            f"not inside {project}: install it in the project (say .venv), or pass --executable"
        ) from None
    if entry.name != "harness":  # no console script: the interpreter runs the package
        return f"{ROOT_EXPRESSIONS[agent]}/{shlex.quote(inside.as_posix())} -m strategies"
    return f"{ROOT_EXPRESSIONS[agent]}/{shlex.quote(inside.as_posix())}"


# What Claude Code's SessionStart self-test prints when the stop hook cannot start: its
# stdout is given to the model as context (and shown in the stream), so the agent is told at
# once, before it works a whole session believing a gate checks it.
SESSION_WARNING = (
    "WARNING from the project's completion gate: the harness stop hook cannot start here "
    "(%s cannot be run: a removed venv or a moved checkout?), so no stop in this session will "
    "be checked. Tell the user at once, and in your final answer: recreate the venv, or run "
    "harness hook install --agent claude again."
)


def session_check_command(entry: EntryPoint) -> str:
    """The SessionStart self-test: the stop hook's own guard (`guarded`), which prints
    `SESSION_WARNING` when it fails and nothing when the hook can start; always exit 0."""
    test = '[ -x "$h" ]'
    if entry.interpreter is not None:
        test += f' && [ -x "${{h%/*}}"/{shlex.quote(entry.interpreter)} ]'
    warning = shlex.quote(SESSION_WARNING + "\\n")
    return f'h={entry.word}; {test} || printf {warning} "$h"; exit 0'


def with_session_check(
    config: dict[str, Any], executable: str | None, *, where: str
) -> dict[str, Any]:
    """`config` with Claude Code's SessionStart self-test for the stop hook's entry point,
    added once or updated in place (none for an entry point the guard cannot check)."""
    start = default_executable() if executable is None else executable.strip()
    entry = entry_point(start)
    if entry is None:
        return config
    merged = copy.deepcopy(config)
    ours = {"type": "command", "command": session_check_command(entry), "timeout": 10}
    groups = _list(_table(merged, "hooks", where), "SessionStart", f"{where}: hooks")
    for group in groups:
        entries = group.get("hooks") if isinstance(group, dict) else None
        for existing in entries if isinstance(entries, list) else []:
            command = existing.get("command") if isinstance(existing, dict) else None
            if isinstance(command, str) and "completion gate: the harness stop hook" in command:
                existing.update(ours)
                return merged
    groups.append({"hooks": [ours]})
    return merged


def config_path(agent: str, scope: Scope, project: Path) -> Path:
    """Where `agent` reads its hooks: in `project`, or in the user's home folder."""
    _check_agent(agent)
    if agent == "copilot":
        if scope != "project":
            raise ConfigurationError(
                "GitHub Copilot CLI reads hooks from the repository's .github/hooks/*.json: "
                "use --scope project"
            )
        return project / ".github" / "hooks" / "harness.json"
    if agent == "codex" and scope == "user":
        return trust.codex_home() / "hooks.json"
    base = project if scope == "project" else Path.home()
    name = "hooks.json" if agent in ("codex", "cursor") else "settings.json"
    return base / f".{agent}" / name


def hook_timeout(agent: str, time_limit: float) -> float | int:
    """The ``timeout`` written for `agent`: the hook's own limit plus `MARGIN`, in the agent's
    unit (milliseconds for Gemini CLI and Qwen Code, whole seconds for Codex)."""
    timeout: float | int = time_limit + MARGIN
    if agent in MILLISECONDS:
        return round(timeout * 1000)
    if agent == "codex":  # Codex reads a whole number of seconds (a u64)
        return math.ceil(timeout)
    return int(timeout) if float(timeout).is_integer() else timeout


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
    event = EVENTS[agent]
    timeout = hook_timeout(agent, time_limit)
    field = "bash" if agent == "copilot" else "command"
    entry: dict[str, Any] = {"command": command, "timeout": timeout}
    if agent in ("cursor", "copilot"):
        version = merged.setdefault("version", 1)
        if version != 1:
            raise ConfigurationError(f"{where}: 'version' must be 1 (got {version!r})")
        if agent == "cursor":
            entry["loop_limit"] = max_blocks
        else:  # Copilot CLI: {"type": "command", "bash": ..., "timeoutSec": ...}
            entry = {"type": "command", "bash": command, "timeoutSec": timeout}
        lists = [_list(_table(merged, "hooks", where), event, f"{where}: hooks")]
    else:
        entry = {"type": "command", **entry}
        if agent == "gemini":
            entry["name"] = "harness-verify"
        lists = _group_lists(merged, event, where)
    ours = _hook_key(command)
    for entries in lists:
        for existing in entries:
            if isinstance(existing, dict) and _hook_key(existing.get(field)) == ours:
                existing.update(entry)  # the same hook on the same spec: new options
                return (merged, True) if merged != config else (config, False)
    if agent in ("cursor", "copilot"):
        lists[0].append(entry)
    else:
        _list(merged["hooks"], event, where).append({"hooks": [entry]})
    return merged, True


def find_hooks(agent: str, config: dict[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    """Every one of these stop hooks in the agent's parsed `config`: its group's index, its
    index in the group (Cursor and Copilot: 0 and the list index) and the entry."""
    hooks = config.get("hooks")
    groups = hooks.get(EVENTS[agent]) if isinstance(hooks, dict) else None
    if not isinstance(groups, list):
        return []
    field = "bash" if agent == "copilot" else "command"
    found = []
    if agent in ("cursor", "copilot"):
        for index, entry in enumerate(groups):
            if isinstance(entry, dict) and _hook_key(entry.get(field)) is not None:
                found.append((0, index, entry))
        return found
    for group_index, group in enumerate(groups):
        entries = group.get("hooks") if isinstance(group, dict) else None
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            if isinstance(entry, dict) and _hook_key(entry.get(field)) is not None:
                found.append((group_index, index, entry))
    return found


def entry_command(agent: str, entry: dict[str, Any]) -> str | None:
    """The shell command of an installed entry."""
    command = entry.get("bash" if agent == "copilot" else "command")
    return command if isinstance(command, str) else None


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
    executable: str | None = None,
    max_blocks: int = DEFAULT_MAX_BLOCKS,
    time_limit: float = DEFAULT_TIME_LIMIT,
    observe: bool = False,
    record_trust: bool = False,
    dry_run: bool = False,
    committed: bool = False,
    walk_up: bool = False,
) -> Installed:
    """Merge the stop hook for `agent` into its configuration file (unless `dry_run`); with
    `record_trust`, also record the user's trust where Codex or Gemini CLI keeps it."""
    folder = (project or Path.cwd()).expanduser()
    if scope == "project" and not folder.is_dir():
        raise ConfigurationError(f"the project {str(folder)!r} is not an existing folder")
    folder = folder.resolve()
    path = config_path(agent, scope, folder)
    existing = _read(path)
    committed = committed or (executable is not None and "$" in executable)
    if walk_up:
        if spec.is_absolute():
            raise ConfigurationError(
                "--walk-up names the spec relative to each project's root (say checks.toml)"
            )
        written = spec
    elif committed:
        written = committed_spec(spec, folder)
        if executable is None:
            executable = committed_executable(agent, folder)
    else:
        written = spec if spec.expanduser().is_absolute() else _from_project(spec, folder)
    command = hook_command(
        agent,
        written,
        executable=executable,
        max_blocks=max_blocks,
        time_limit=time_limit,
        observe=observe,
        committed=committed or walk_up,
        walk_up=walk_up,
    )
    merged, changed = merge_hook(
        agent,
        existing,
        command,
        where=str(path),
        max_blocks=max_blocks,
        time_limit=time_limit,
    )
    if agent == "claude" and not walk_up:
        merged = with_session_check(merged, executable, where=str(path))
        changed = merged != existing
    result = Installed(path, merged, changed)
    if changed and not dry_run:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(result.text(), encoding="utf-8")
        os.replace(temporary, path)
    notes: tuple[str, ...] = ()
    if agent == "codex":
        notes = _codex_trust(path, existing, merged, command, scope, folder, record_trust, dry_run)
    elif agent == "gemini" and scope == "project":
        notes = _gemini_trust(folder, record_trust, dry_run)
    elif agent == "copilot":
        notes = _copilot_trust(folder, record_trust, dry_run)
    elif record_trust:
        notes = (f"--trust: {agent} keeps no trust for hooks; nothing else was recorded",)
    return Installed(path, merged, changed, notes)


def _codex_trust(
    path: Path,
    before: dict[str, Any],
    after: dict[str, Any],
    command: str,
    scope: Scope,
    folder: Path,
    record: bool,
    dry_run: bool,
) -> tuple[str, ...]:
    """Codex's trust for the hook just written: recorded (asked, or carried over from the
    same hook trusted before), or what to run."""
    config_file = trust.codex_home() / "config.toml"
    config = trust.read_toml(config_file)
    ours = _hook_key(command)
    group, index, entry = next(
        hook for hook in find_hooks("codex", after) if _hook_key(hook[2]["command"]) == ours
    )
    key = trust.codex_hook_key(path, group, index)
    new_hash = trust.codex_hook_hash(entry)
    project = trust.codex_project_root(folder) if scope == "project" else None
    trusted_hash = trust.codex_trusted_hash(config, key)
    project_ok = project is None or trust.codex_project_trusted(config, project)
    if trusted_hash == new_hash and project_ok:
        return (f"Codex trusts this hook ({config_file})",)
    was_trusted = any(
        trust.codex_hook_key(path, g, i) == key and trust.codex_hook_hash(e) == trusted_hash
        for g, i, e in find_hooks("codex", before)
    )
    if record or (was_trusted and project_ok):
        if dry_run:
            return (f"would record the hook's trust in {config_file}",)
        trust.record_codex_trust(config_file, key=key, hook_hash=new_hash, project=project)
        what = "the hook" + ("" if project is None else f" and the project {project}")
        how = "as you asked (--trust)" if record else "carried over: you trusted this hook before"
        return (f"recorded Codex's trust in {what} in {config_file}, {how}",)
    missing = "this hook" if project_ok else f"this hook and the project {project}"
    return (
        f"Codex will NOT run it yet: Codex runs only hooks you trusted, and {missing} "
        "is not trusted. Run this install again with --trust to record it (or open codex in "
        "the project, review it in /hooks and trust it there).",
    )


def _gemini_trust(folder: Path, record: bool, dry_run: bool) -> tuple[str, ...]:
    """Gemini CLI's folder trust for the project: recorded (asked), or what to run."""
    where = trust.gemini_trusted_folders_path()
    trusted = trust.gemini_folder_trust(folder, trust.read_gemini_trust(where))
    if trusted:
        return (f"Gemini CLI trusts the folder {folder} ({where})",)
    if record:
        if dry_run:
            return (f"would trust the folder {folder} in {where}",)
        trust.record_gemini_trust(folder)
        return (f"recorded Gemini CLI's trust in the folder {folder} in {where} (--trust)",)
    state = "marked DO_NOT_TRUST" if trusted is False else "not trusted"
    return (
        f"Gemini CLI will NOT run it yet: it runs a project's hooks only in a trusted folder, "
        f"and {folder} is {state} ({where}; headless gemini exits 55 there, and --skip-trust "
        "skips the project's hooks). Run this install again with --trust, or trust the folder "
        "in gemini's interactive trust dialog.",
    )


def _copilot_trust(folder: Path, record: bool, dry_run: bool) -> tuple[str, ...]:
    """Copilot CLI's folder trust for the project: recorded (asked), or what to run."""
    where = trust.copilot_config_path()
    if trust.copilot_folder_trusted(folder, trust.read_copilot_config(where)):
        return (f"GitHub Copilot CLI trusts the folder {folder} ({where})",)
    if record:
        if dry_run:
            return (f"would trust the folder {folder} in {where}",)
        trust.record_copilot_trust(folder)
        return (f"recorded GitHub Copilot CLI's trust in the folder {folder} in {where} (--trust)",)
    return (
        f"GitHub Copilot CLI will NOT run it yet: it loads a repository's hooks only in a "
        f"folder you trusted, and {folder} is not in trustedFolders ({where}; copilot -p skips "
        "the hook without a word, and --trust-folder trusts one session only). Run this "
        "install again with --trust, or answer copilot's folder-trust prompt with 'this and "
        "future sessions'.",
    )


def _from_project(spec: Path, project: Path) -> Path:
    """A relative spec: the project root's when it holds it, else the current folder's."""
    return project / spec if (project / spec).exists() else spec.absolute()


def _read(path: Path) -> dict[str, Any]:
    """The file's JSON object; an empty object if the file does not exist."""
    try:
        text = read_text(path)
    except UnreadableRecord as exc:
        raise ConfigurationError(f"cannot read {exc}; it was left as it is") from None
    text = (text or "").removeprefix("\ufeff")
    if not text.strip():
        return {}
    try:
        data = parse_json(text, path)
    except UnreadableRecord as exc:
        raise ConfigurationError(
            f"{path}: not valid JSON ({exc.reason}); fix or move it, it was left as it is"
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
