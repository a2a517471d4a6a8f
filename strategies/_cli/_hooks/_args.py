"""`harness hook`: its command line, and the defaults it shares with the hooks (the handlers
are in `_hook` and `_hook_start`).

A coding agent runs `harness hook AGENT-stop` at every stop: the parser is built from this
module alone; the checks, the spec and the event loop load when the stop is decided.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._handlers import Handler

DEFAULT_MAX_BLOCKS = 5
# The hook's own deadline for all its checks: below the 60 s that Claude Code and Gemini CLI
# give a command hook by default (Claude Code has since raised its default to 600 s), with a
# margin for starting Python and answering. `harness hook install` writes 60 s out.
DEFAULT_TIME_LIMIT = 50.0
AGENTS = ("claude", "codex", "gemini", "cursor", "qwen", "copilot")
EXIT_OK = 0
EXIT_BROKEN = 1  # a non-blocking error for every agent: it may stop
EXIT_ARGPARSE = 2  # argparse's exit code for a bad command line, which would block the stop
# Each agent's stop-hook subcommand (its adapter's `subcommand`, `_hook_agents.ADAPTERS`: a
# test holds the two alike; the adapters are not imported to build the parser).
STOP_COMMANDS = {
    "claude": "claude-stop",
    "codex": "codex-stop",
    "gemini": "gemini-stop",
    "cursor": "cursor-stop",
    "qwen": "qwen-stop",
    "copilot": "copilot-stop",
}
HELP = {
    "claude": "Claude Code's Stop/SubagentStop hook",
    "codex": "Codex's Stop hook",
    "gemini": "Gemini CLI's AfterAgent hook",
    "cursor": "Cursor's stop hook",
    "qwen": "Qwen Code's Stop hook",
    "copilot": "GitHub Copilot CLI's agentStop hook",
}


def register(sub: Any) -> None:
    kinds = _hook(sub)
    for agent in STOP_COMMANDS:
        _stop(kinds, agent)
    install = kinds.add_parser(
        "install",
        help="write an agent's stop-hook configuration (merged with what is there)",
        description=(
            "Adds the stop hook for AGENT to its configuration file in the project (or the "
            "user's), keeping everything else; a second install changes nothing."
        ),
    )
    install.add_argument("--agent", required=True, choices=AGENTS)
    install.add_argument("--spec", type=Path, required=True, help="the spec whose checks to run")
    install.add_argument(
        "--scope",
        choices=["project", "user"],
        default="project",
        help="the project's configuration (default) or the user's",
    )
    install.add_argument(
        "--project", type=Path, help="the project folder (default: the current folder)"
    )
    install.add_argument(
        "--executable",
        help=(
            "how the agent starts harness, written as given (say "
            "'\"$CLAUDE_PROJECT_DIR\"/.venv/bin/harness' in a committed file; default: this "
            "harness's own absolute entry point, which needs no PATH)"
        ),
    )
    install.add_argument(
        "--committed",
        action="store_true",
        help=(
            "write a hook that is safe to commit: the spec relative to the project root and "
            "harness started from the project, each named the agent's way at run time (implied "
            "by an --executable holding a $VARIABLE)"
        ),
    )
    install.add_argument(
        "--walk-up",
        action="store_true",
        help=(
            "with --scope user: a hook that finds the project's spec (named relative to its "
            "root) from any subfolder, for agents that read only the working folder's settings"
        ),
    )
    install.add_argument("--max-blocks", type=int, default=DEFAULT_MAX_BLOCKS)
    install.add_argument("--timeout", type=float, default=DEFAULT_TIME_LIMIT)
    install.add_argument(
        "--observe",
        action="store_true",
        help="the hook runs the checks and records the verdict, but never blocks a stop",
    )
    install.add_argument(
        "--trust",
        action="store_true",
        help=(
            "also record your trust where the agent keeps it (Codex: the hook's trusted_hash "
            "and the project; Gemini CLI and Copilot CLI: the trusted folder)"
        ),
    )
    install.add_argument(
        "--dry-run", action="store_true", help="print the merged file instead of writing it"
    )
    install.set_defaults(handler=Handler("._hooks._stop", "handle_install"))
    doctor = kinds.add_parser(
        "doctor",
        help="run the installed stop hook as the agent would and say whether stops are checked",
        description=(
            "Reads each agent's installed stop hook, runs its command the way the agent runs it "
            "(its shell, a minimal PATH, its payload, its timeout) and says whether a stop "
            "would be checked, and if not, what to change."
        ),
    )
    doctor.add_argument("--agent", choices=AGENTS, help="only this agent (default: every one)")
    doctor.add_argument(
        "--project", type=Path, help="the project folder (default: the current folder)"
    )
    doctor.set_defaults(handler=Handler("._hooks._doctor", "handle_doctor"))
    verdicts = kinds.add_parser(
        "verdicts",
        help="the stop hooks' recorded verdicts (observe mode's included), newest last",
    )
    verdicts.add_argument("--state-dir", type=Path, help="the stop hooks' --state-dir")
    verdicts.add_argument("--last", type=int, default=20, help="how many (default 20)")
    verdicts.add_argument("--json", action="store_true", help="one JSON object a line")
    verdicts.set_defaults(handler=Handler("._hooks._verdicts", "handle_verdicts"))
    _start(kinds)


def register_stop(sub: Any, subcommand: str) -> bool:
    """Register ``harness hook SUBCOMMAND`` alone when it is an agent's stop hook (a stop,
    at every stop of an agent, parses its own command line: the same grammar, usage and
    errors, without building the other hook commands' parsers); False when it is not one."""
    for agent, name in STOP_COMMANDS.items():
        if name == subcommand:
            _stop(_hook(sub), agent)
            return True
    return False


def _hook(sub: Any) -> Any:
    hook = sub.add_parser("hook", help="bridges for coding agents' hooks")
    return hook.add_subparsers(dest="hook", required=True, metavar="HOOK")


def _stop(kinds: Any, agent: str) -> None:
    stop = kinds.add_parser(
        STOP_COMMANDS[agent],
        help=f"{HELP[agent]}: send the agent back to work until the spec's checks pass",
        description=(
            f"Reads {HELP[agent]}'s payload on stdin; prints its answer "
            "(a block with the reason, or letting it stop)."
        ),
    )
    _stop_options(stop)
    stop.set_defaults(handler=Handler("._hooks._stop", "handle_stop"), agent=agent)


def _stop_options(stop: argparse.ArgumentParser) -> None:
    stop.add_argument(
        "--spec",
        type=Path,
        required=True,
        metavar="SPEC.toml",
        help="the spec whose checks to run (a relative path: in the project root, found from "
        "any folder of the project)",
    )
    stop.add_argument(
        "--workspace", type=Path, metavar="DIR", help="check this folder (default: payload's)"
    )
    stop.add_argument(
        "--max-blocks",
        type=int,
        metavar="N",
        default=DEFAULT_MAX_BLOCKS,
        help=f"blocks in a row before a stop is allowed anyway (default {DEFAULT_MAX_BLOCKS})",
    )
    stop.add_argument(
        "--reentry",
        choices=["check", "allow"],
        default="check",
        help="when the agent re-enters after a block: check again (default) or always allow",
    )
    stop.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        default=DEFAULT_TIME_LIMIT,
        help=(
            f"seconds all checks may take together (default {DEFAULT_TIME_LIMIT:g}); keep it below "
            "the hook's \"timeout\" in the agent's settings"
        ),
    )
    stop.add_argument(
        "--observe",
        action="store_true",
        help="run the checks and record the verdict, but never block the stop",
    )
    stop.add_argument("--state-dir", type=Path, metavar="DIR", help="where block counts are kept")
    stop.add_argument(
        "--walk-up",
        action="store_true",
        help=(
            "a user-scope hook: a folder with no spec above it is not a gated project (the stop "
            "goes), and one whose own settings run the hook is left to that hook"
        ),
    )


def _start(kinds: Any) -> None:
    """Add ``claude-start`` to the ``harness hook`` subcommands."""
    start = kinds.add_parser(
        "claude-start",
        help="a SessionStart hook: record the protected paths and baselines for the stop hook",
        description="Reads a SessionStart payload on stdin; prints nothing on stdout.",
    )
    start.add_argument("--spec", type=Path, required=True, help="the spec the stop hook uses")
    start.add_argument("--workspace", type=Path, help="record this folder (default: payload cwd)")
    start.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIME_LIMIT,
        help=f"seconds recording may take (default {DEFAULT_TIME_LIMIT:g})",
    )
    start.add_argument("--state-dir", type=Path, help="the stop hook's --state-dir")
    start.set_defaults(handler=Handler("._hooks._start", "handle_claude_start"))
