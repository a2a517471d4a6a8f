"""`harness hook doctor [--agent X]`: does an installed stop hook really check a stop?

Hooks fail silently: an agent that cannot start the hook, kills it at its timeout, or never
runs it (untrusted) lets the stop through and says nothing. The doctor reads each installed
entry (the project's file and the user's) and, for each, says in a line or two whether a stop
would be checked, and if not, what to change:

- **Trust**: Codex runs only a hook whose ``trusted_hash`` matches, in a trusted project;
  Gemini CLI runs a project's hooks only in a trusted folder (`_trust`).
- **The run**: the entry's command is run the way the agent runs it: its shell (`SHELLS`), a
  minimal PATH (``/usr/bin:/bin``: an agent started from a desktop or a service has no venv on
  its PATH), the project folder as the working folder and the agent's project variables, the
  agent's payload shape on stdin, and the entry's timeout read in the agent's own unit. A command
  not found (exit 127), killed at the timeout, failing (exit 1) or printing no answer the agent
  can read is reported with its stderr. The doctor's run keeps its state in a temporary folder:
  it never counts a block or records a verdict for a real session.
- **Observe mode**: a hook installed with ``--observe`` checks stops but never blocks one.

"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from attrs import frozen

from harness import ConfigurationError

from .._terminal import for_terminal
from . import _trust as trust
from ._args import AGENTS, DEFAULT_TIME_LIMIT
from ._core import CANNOT_RUN, default_state_dir, read_verdicts
from ._files import UnreadableRecord, read_json
from ._install import (
    MILLISECONDS,
    Scope,
    config_path,
    entry_command,
    find_hooks,
    hook_timeout,
)
from ._ledger import NOT_STARTED
from ._root import ROOT_VARIABLES, repository_root

EXIT_OK = 0
EXIT_UNCHECKED = 1  # some installed hook would not check a stop (or none is installed)
EXIT_BAD_INPUT = 2
# The PATH an agent started outside the user's login shell has.
MINIMAL_PATH = "/usr/bin:/bin"
# How each agent runs a command hook on a POSIX system ("$SHELL" is the user's shell).
SHELLS: dict[str, tuple[str, ...]] = {
    "claude": ("/bin/sh", "-c"),
    "codex": ("$SHELL", "-lc"),  # codex-rs/hooks command_runner: $SHELL -lc, else /bin/sh
    "gemini": ("bash", "-c"),
    "cursor": ("/bin/sh", "-c"),
    "qwen": ("bash", "-c"),
    "copilot": ("bash", "-c"),
}
# Each agent's default hook timeout in seconds, when the entry sets none.
DEFAULT_TIMEOUTS = {"claude": 600, "codex": 600, "gemini": 60, "cursor": 60, "qwen": 60}


@frozen
class Finding:
    """One installed hook's diagnosis: where, whether a stop is checked, and what to change."""

    agent: str
    path: Path
    checked: bool
    summary: str
    fix: str | None = None
    detail: str | None = None
    warnings: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        mark = "ok" if self.checked else "NOT CHECKED"
        out = [
            f"{self.agent:<8} {mark}: {for_terminal(self.summary)}",
            f"         in {for_terminal(self.path)}",
        ]
        out.extend(f"         warning: {for_terminal(w)}" for w in self.warnings)
        if self.fix:
            out.append(f"         fix: {for_terminal(self.fix)}")
        if self.detail:
            shown = for_terminal(self.detail, lines=True).strip().splitlines()[-6:]
            out.extend(f"         | {line}" for line in shown)
        return out


def diagnose(agents: Sequence[str], project: Path) -> list[Finding]:
    """A `Finding` for every installed stop hook of `agents`, in the project and the user's
    configuration; an agent with none installed anywhere gets one saying so when it was
    asked for alone."""
    findings: list[Finding] = []
    for agent in agents:
        seen = False
        for scope in ("project", "user"):
            try:
                path = config_path(agent, scope, project)
            except ConfigurationError:
                continue
            config = _read_json(path)
            if config is None:
                continue
            for group, index, entry in find_hooks(agent, config):
                seen = True
                found = _diagnose(agent, scope, path, project, group, index, entry)
                if scope == "project":
                    warnings = (
                        *_outside(agent, entry_command(agent, entry) or "", project),
                        *_subfolder_gap(agent, project),
                    )
                    found = attrs.evolve(found, warnings=found.warnings + warnings)
                findings.append(found)
        if not seen and len(agents) == 1:
            findings.append(
                Finding(
                    agent,
                    config_path(agent, "project", project),
                    False,
                    "no harness stop hook is installed for this agent",
                    fix=f"harness hook install --agent {agent} --spec SPEC.toml",
                )
            )
    return findings


def _diagnose(
    agent: str,
    scope: Scope,
    path: Path,
    project: Path,
    group: int,
    index: int,
    entry: dict[str, Any],
) -> Finding:
    command = entry_command(agent, entry) or ""
    timeout = _timeout_seconds(agent, entry)
    if agent == "qwen" and timeout is not None and timeout < 1:
        return Finding(
            agent,
            path,
            False,
            f"its timeout is {entry.get('timeout')!r}, and Qwen Code reads milliseconds: it "
            f"kills the hook after {timeout * 1000:g} ms, before any check can answer",
            fix=f"harness hook install --agent qwen (writes {_ms_example()} ms), or set "
            '"timeout" in milliseconds',
        )
    untrusted = _trust(agent, scope, path, project, group, index, entry)
    if untrusted is not None:
        return Finding(agent, path, False, untrusted[0], fix=untrusted[1])
    return _run(agent, path, project, command, timeout or DEFAULT_TIMEOUTS.get(agent, 60))


def _outside(agent: str, command: str, project: Path) -> tuple[str, ...]:
    """A warning for each path the entry names outside the repository: a clone of the
    project elsewhere (a team mate's, CI's) has no such path, and its stops go unchecked."""
    root = repository_root(project)
    outside = []
    for word in _words(command):
        for variable in (*ROOT_VARIABLES.get(agent, ()), "CLAUDE_PROJECT_DIR"):
            for form in (f"${{{variable}}}", f"${variable}"):
                word = word.replace(form, str(project))
        if word.startswith("/") and not Path(word).is_relative_to(root):
            outside.append(word)
    if not outside:
        return ()
    return (
        f"the entry names {', '.join(outside)}, outside the repository {root}: committed, it "
        "works only on this machine (a clone elsewhere stops unchecked); fix: harness hook "
        f"install --agent {agent} --committed --spec SPEC.toml (paths a clone finds)",
    )


def _subfolder_gap(agent: str, project: Path) -> tuple[str, ...]:
    """Claude Code and Gemini CLI read a project's settings only in the folder they start
    in: started in a subfolder, they run none of its hooks. Said unless a user-scope
    ``--walk-up`` hook covers the subfolders."""
    if agent not in ("claude", "gemini"):
        return ()
    user = _read_json(config_path(agent, "user", project)) or {}
    if any(
        "--walk-up" in _words(entry_command(agent, e) or "") for *_, e in find_hooks(agent, user)
    ):
        return ()
    name = "Claude Code" if agent == "claude" else "Gemini CLI"
    return (
        f"{name} reads .{agent}/settings.json only in the folder it starts in: started in a "
        f"subfolder of {project}, it runs no stop hook and stops unchecked; fix: harness hook "
        f"install --agent {agent} --scope user --walk-up --spec SPEC.toml (the spec named "
        "relative to the project root: a user hook that finds it from any subfolder)",
    )


def _ms_example() -> str:
    return f"{hook_timeout('qwen', DEFAULT_TIME_LIMIT):,}"


def _timeout_seconds(agent: str, entry: dict[str, Any]) -> float | None:
    value = entry.get("timeoutSec" if agent == "copilot" else "timeout")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value / 1000 if agent in MILLISECONDS else float(value)


def _trust(
    agent: str,
    scope: Scope,
    path: Path,
    project: Path,
    group: int,
    index: int,
    entry: dict[str, Any],
) -> tuple[str, str] | None:
    """Why the agent would not run the hook at all (and the fix), or None."""
    if agent == "codex":
        config_file = trust.codex_home() / "config.toml"
        config = trust.read_toml(config_file)
        key = trust.codex_hook_key(path, group, index)
        root = trust.codex_project_root(project)
        if scope == "project" and not trust.codex_project_trusted(config, root):
            return (
                f"Codex does not read the project's .codex folder: the project {root} is not "
                f"trusted in {config_file}",
                "harness hook install --agent codex --trust (with the same options), or trust "
                "the project when codex asks",
            )
        if trust.codex_hook_disabled(config, key):
            return (
                f"the hook is turned off in Codex ({config_file}: hooks.state.{key!r}.enabled)",
                "turn it on again in codex's /hooks",
            )
        recorded = trust.codex_trusted_hash(config, key)
        if recorded != trust.codex_hook_hash(entry):
            state = "was changed since it was trusted" if recorded else "is not trusted"
            return (
                f"Codex skips the hook without a word: it {state} (no matching trusted_hash "
                f"for {key!r} in {config_file})",
                "harness hook install --agent codex --trust (with the same options), or trust "
                "it in codex's /hooks",
            )
    if agent == "copilot":
        where = trust.copilot_config_path()
        if not trust.copilot_folder_trusted(project, trust.read_copilot_config(where)):
            return (
                f"GitHub Copilot CLI loads a repository's hooks only in a trusted folder, and "
                f"{project} is not trusted in {where} (copilot -p skips the hook without a word; "
                "--trust-folder trusts one session only)",
                "harness hook install --agent copilot --trust, or answer copilot's folder-trust "
                "prompt with 'this and future sessions'",
            )
    if agent == "gemini" and scope == "project":
        where = trust.gemini_trusted_folders_path()
        trusted = trust.gemini_folder_trust(project, trust.read_gemini_trust(where))
        if not trusted:
            state = "is marked DO_NOT_TRUST" if trusted is False else "is not trusted"
            return (
                f"Gemini CLI runs a project's hooks only in a trusted folder, and {project} "
                f"{state} in {where} (headless gemini exits 55; --skip-trust skips the hooks)",
                "harness hook install --agent gemini --trust, or trust the folder in gemini",
            )
    return None


def _run(agent: str, path: Path, project: Path, command: str, timeout: float) -> Finding:
    """Run the hook's command as the agent would and read its answer."""
    shell = list(SHELLS[agent])
    if shell[0] == "$SHELL":
        shell[0] = os.environ.get("SHELL") or "/bin/sh"
    with tempfile.TemporaryDirectory(prefix="harness-doctor-") as state:
        env = {
            "PATH": MINIMAL_PATH,
            "HOME": os.environ.get("HOME", state),
            "XDG_STATE_HOME": state,  # the doctor's blocks and verdicts stay out of the real ones
            "CLAUDE_PROJECT_DIR": str(project),
            "GEMINI_PROJECT_DIR": str(project),
            "QWEN_PROJECT_DIR": str(project),
        }
        started = time.monotonic()
        try:
            ran = _run_in_group([*shell, command], _payload(agent, project), project, env, timeout)
        except subprocess.TimeoutExpired:
            return Finding(
                agent,
                path,
                False,
                f"the agent kills the hook after its timeout ({timeout:g} s) before it answers",
                fix="raise the entry's timeout (in the agent's unit) above the hook's --timeout",
            )
        except OSError as exc:
            return Finding(agent, path, False, f"the agent's shell cannot start: {exc}")
    took = time.monotonic() - started
    observe = "--observe" in _words(command)
    missing = _missing_entry_point(agent, command, project)
    if missing is not None and ran.returncode != 0:
        return Finding(
            agent,
            path,
            False,
            f"the hook's entry point {missing} no longer exists (a venv removed or moved?): "
            f"the agent cannot start it (exit {ran.returncode}) and stops unchecked",
            fix=(
                f"install harness there again, or run harness hook install --agent {agent} "
                "again from the harness you use now (it writes that one's entry point)"
            ),
            detail=ran.stderr,
        )
    if ran.returncode == 1 and f"harness hook: {NOT_STARTED}:" in ran.stderr:
        return Finding(
            agent,
            path,
            False,
            "the hook's entry point cannot be run here (a venv removed or never made, a "
            "checkout moved): each stop goes through unchecked, recorded as an error",
            fix=(
                "recreate the venv the command names (python -m venv .venv, then install "
                f"harness there), or run harness hook install --agent {agent} again"
            ),
            detail=ran.stderr,
        )
    if ran.returncode == 127 or ("not found" in ran.stderr and ran.returncode != 0):
        return Finding(
            agent,
            path,
            False,
            "the command cannot start without your shell's PATH (exit "
            f"{ran.returncode}): the agent stops unchecked",
            fix=(
                f"harness hook install --agent {agent} (writes this harness's absolute entry "
                "point), or an absolute --executable"
            ),
            detail=ran.stderr,
        )
    if ran.returncode != 0:
        return Finding(
            agent,
            path,
            False,
            f"the hook fails (exit {ran.returncode}), which the agent treats as "
            + ("a block with the error as the reason" if ran.returncode == 2 else "'let it stop'"),
            fix="read the error below (a spec that does not load, a missing workspace...)",
            detail=ran.stderr or ran.stdout,
        )
    answer = _answer(agent, ran.stdout)
    if answer is None:
        return Finding(
            agent,
            path,
            False,
            "the hook prints something the agent cannot read as its answer",
            detail=ran.stdout,
        )
    if answer and CANNOT_RUN in ran.stdout:
        return Finding(
            agent,
            path,
            False,
            "the hook cannot run the checks: each stop is blocked with the error (the agent "
            "is told so), up to the block cap, then let through",
            fix="read the error below (a spec missing in this checkout, or one that does not load)",
            detail=ran.stderr,
        )
    verdict = "the checks fail now: a stop would be blocked" if answer else "the checks pass now"
    if observe:
        verdict = "observe mode: the checks run and are recorded, but a stop is never blocked"
    return Finding(agent, path, True, f"a stop is checked ({verdict}; {took:.1f} s)")


def _run_in_group(
    argv: list[str], payload: dict[str, Any], cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run the hook in a process group of its own; at the timeout, the whole group is killed
    (the shell and the checks it started), as the agent would, and none is left running."""
    with subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
        start_new_session=True,
    ) as process:
        try:
            out, err = process.communicate(json.dumps(payload), timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            process.communicate()
            raise
        except BaseException:
            _kill_group(process)
            raise
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _missing_entry_point(agent: str, command: str, project: Path) -> str | None:
    """The command's first word, when it names a file (absolute, or under the agent's project
    variable) that does not exist."""
    words = _words(command)
    if not words:
        return None
    first = words[0]
    if first.startswith("h=") and first.endswith(";"):  # a guarded command (`_install.guarded`)
        first = first[2:-1]
    for variable in (*ROOT_VARIABLES.get(agent, ()), "CLAUDE_PROJECT_DIR"):
        first = first.replace(f"${{{variable}}}", str(project)).replace(
            f"${variable}", str(project)
        )
    if "$" in first or not first.startswith("/"):
        return None
    return None if Path(first).exists() else first


def _payload(agent: str, project: Path) -> dict[str, Any]:
    """A stop payload in `agent`'s shape, for a session of the doctor's own."""
    session = f"harness-doctor-{uuid.uuid4().hex[:12]}"
    message = "harness hook doctor: a trial stop"
    cwd = str(project)
    if agent == "cursor":
        return {
            "conversation_id": session,
            "generation_id": session,
            "hook_event_name": "stop",
            "workspace_roots": [cwd],
            "status": "completed",
            "loop_count": 0,
        }
    if agent == "copilot":
        return {
            "sessionId": session,
            "timestamp": int(time.time() * 1000),
            "cwd": cwd,
            "transcriptPath": "",
            "stopReason": "end_turn",
            "stop_hook_active": False,
        }
    if agent == "gemini":
        return {
            "session_id": session,
            "transcript_path": "",
            "cwd": cwd,
            "hook_event_name": "AfterAgent",
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "prompt": "",
            "prompt_response": message,
            "stop_hook_active": False,
        }
    return {
        "session_id": session,
        "transcript_path": "",
        "cwd": cwd,
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": message,
        **({"turn_id": session, "model": "doctor"} if agent == "codex" else {}),
    }


def _answer(agent: str, stdout: str) -> bool | None:
    """Whether the hook's stdout blocks the stop (None: not an answer the agent reads)."""
    text = stdout.strip()
    if not text:
        return False if agent not in ("gemini",) else None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if agent == "cursor":
        return bool(data.get("followup_message"))
    if agent == "gemini":
        return data.get("decision") == "deny"
    return data.get("decision") == "block"


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _read_json(path: Path) -> dict[str, Any] | None:
    """An agent's settings file through the bounded reader: None when it does not exist; one
    that is a FIFO, a device, a folder, not UTF-8 or JSON too deep is an error naming it."""
    try:
        data = read_json(path)
    except UnreadableRecord as exc:
        raise ConfigurationError(f"{exc} (cannot be read as the agent's settings)") from None
    return data if isinstance(data, dict) else None


def recorded_unchecked(state_dir: Path, last: int = 50) -> list[str]:
    """Lines on the stops among the `last` recorded that went unchecked (an error, or a hook
    killed before it completed its record); none when there are none."""
    try:
        verdicts = read_verdicts(state_dir)[-last:]
    except ConfigurationError as exc:
        return [f"the record cannot be read: {for_terminal(exc)}"]
    unchecked = [v for v in verdicts if v.outcome in ("error", "killed")]
    if not unchecked:
        return []
    killed = sum(1 for v in unchecked if v.outcome == "killed")
    newest = unchecked[-1]
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(newest.at))
    lines = [
        f"recorded: {len(unchecked)} of the last {len(verdicts)} stops were not checked "
        f"({killed} killed, {len(unchecked) - killed} errors) in {for_terminal(state_dir)}",
        f"         the newest: {when} {newest.agent} {newest.describe()}: "
        f"{for_terminal(newest.error or '')}",
        "         (harness hook verdicts lists them)",
    ]
    unstarted = sorted({v.agent for v in unchecked if (v.error or "").startswith(NOT_STARTED)})
    if unstarted:  # written by the installed command's shell (`_install.guarded`)
        lines.append(
            f"         {NOT_STARTED} for {', '.join(unstarted)}: its entry point is gone; fix: "
            "recreate the venv the hook names (say python -m venv .venv and install harness "
            "there again), or run harness hook install --agent AGENT again from the harness "
            "you use now"
        )
    return lines


def handle_doctor(args: argparse.Namespace) -> int:
    project = (args.project or Path.cwd()).expanduser().resolve()
    agents = (args.agent,) if args.agent else AGENTS
    try:
        findings = diagnose(agents, project)
    except ConfigurationError as exc:
        print(f"harness hook doctor: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for line in recorded_unchecked(default_state_dir()):
        print(line)
    if not findings:
        print(
            "harness hook doctor: no harness stop hook is installed here or for the user; "
            "install one with: harness hook install --agent AGENT --spec SPEC.toml"
        )
        return EXIT_UNCHECKED
    for finding in findings:
        print("\n".join(finding.lines()))
    broken = [f for f in findings if not f.checked]
    if broken:
        print(f"{len(broken)} of {len(findings)} installed stop hooks would NOT check a stop.")
        return EXIT_UNCHECKED
    print(f"every installed stop hook ({len(findings)}) checks a stop.")
    return EXIT_OK
