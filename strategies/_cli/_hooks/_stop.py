"""`harness hook AGENT-stop --spec SPEC.toml`: a coding agent's stop hook that runs the spec's
checks on the workspace and sends the agent back to work, with the reason, until they pass.

One command per agent, each reading its agent's documented payload on stdin and answering in
its documented format (`_hook_agents`), all deciding alike (`_stop_core.verify_stop`):

- ``claude-stop``: Claude Code's ``Stop``/``SubagentStop`` hook.
- ``codex-stop``: Codex's ``Stop`` hook.
- ``gemini-stop``: Gemini CLI's ``AfterAgent`` hook.
- ``cursor-stop``: Cursor's ``stop`` hook.
- ``qwen-stop``: Qwen Code's ``Stop`` hook.
- ``copilot-stop``: GitHub Copilot CLI's ``agentStop`` hook.

With ``--observe`` the checks run and the verdict is recorded, but no stop is blocked.

`harness hook install --agent NAME` writes the agent's configuration (`_hook_install`).

It can never wedge a session:

- Blocks are counted per session, and each of Claude Code's subagents apart (a SubagentStop
  names its subagent by ``agent_id``, else by its own transcript), so a subagent's blocks never
  use up the main session's cap; after ``--max-blocks`` blocks in a row the stop is allowed
  (with a note on stderr) and the count starts again; a pass also resets the count.
- Re-entry (Claude Code's and Codex's ``stop_hook_active``, Gemini's ``stop_hook_active``,
  Cursor's ``loop_count`` above zero) is checked again with ``--reentry check`` (the default:
  the cap bounds the chain), or always allowed with ``--reentry allow``.
- The payload on stdin is read with a bound: at most `MAX_PAYLOAD_BYTES`, within
  `STDIN_TIMEOUT` seconds (an endless stream, a FIFO whose writer never closes it, or JSON
  nested too deeply to read is a broken payload, never a hang or a memory blow-up).
- Every stop leaves a record (`_ledger`): started before the spec is read or any check runs,
  completed after with the verdict or the error; one the agent killed at its timeout is shown
  as killed by `harness hook verdicts`.
- A payload or transcript that cannot be read is reported on stderr with exit code 1, which
  every one of these agents treats as a non-blocking error, and recorded as an error. A spec
  that is missing or does not load blocks the stop with the reason (the agent is told the spec
  is the person's to fix), within the same cap, so a broken gate is seen, never silently
  open. A check that fails, cannot start or times out counts as "not done" (fail closed),
  within the cap.
- A relative ``--spec`` names a file in the project root, found from any folder of the project
  (`_root`); the checks judge that root, and the verdict says so when the agent was elsewhere.
- The checks together get ``--timeout`` seconds (`DEFAULT_TIME_LIMIT`), less than the time
  after which the agent kills the hook, so the hook always answers.
- SIGTERM or SIGINT stops the checks (their processes killed) and exits 128 + the signal
  (143, 130): a non-blocking error, so the agent may stop, and the block count is unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import sys
import time
from pathlib import Path
from typing import IO, Any

import anyio
import attrs

from harness import ConfigurationError
from harness.extend import Clock

from ..._spec import Spec, load_spec
from .._signals import SignalCancel
from .._terminal import for_terminal
from ._agents import ADAPTERS, ClaudeStop, StopAdapter
from ._args import (
    DEFAULT_MAX_BLOCKS,
    DEFAULT_TIME_LIMIT,
    EXIT_ARGPARSE,
    EXIT_BROKEN,
    EXIT_OK,
    register,
)
from ._core import (
    HookPayloadError,
    Reentry,
    StopDecision,
    StopOptions,
    StopRequest,
    default_state_dir,
    refuse_unchecked,
    verify_stop,
)
from ._ledger import Started
from ._ledger import start as start_record
from ._root import SpecNotFound, has_own_hook, locate, repository_root

__all__ = [
    "DEFAULT_MAX_BLOCKS",
    "DEFAULT_TIME_LIMIT",
    "EXIT_ARGPARSE",
    "EXIT_BROKEN",
    "EXIT_OK",
    "HookPayloadError",
    "MAX_PAYLOAD_BYTES",
    "STDIN_TIMEOUT",
    "StopDecision",
    "agent_stop",
    "claude_stop",
    "read_payload",
    "register",
]

# A payload is a few hundred bytes; more than this on stdin is not one.
MAX_PAYLOAD_BYTES = 1024 * 1024
# The agent writes the payload and closes stdin at once; a stdin still open after this is not
# an agent's.
STDIN_TIMEOUT = 10.0


async def agent_stop(
    agent: str | StopAdapter,
    payload: object,
    spec: Spec,
    *,
    state_dir: Path,
    max_blocks: int = DEFAULT_MAX_BLOCKS,
    reentry: Reentry = "check",
    workspace: Path | None = None,
    time_limit: float = DEFAULT_TIME_LIMIT,
    clock: Clock | None = None,
    observe: bool = False,
) -> StopDecision:
    """Decide one stop of `agent` (a name in `ADAPTERS`, or an adapter) from its payload.

    The workspace is `workspace`, else the repository around the payload's folder, else the
    spec's own. The checks together get `time_limit` seconds (on `clock`); a check still
    running then, and any not yet started, count as not done.
    """
    options = StopOptions(
        state_dir=state_dir,
        max_blocks=max_blocks,
        reentry=reentry,
        workspace=workspace,
        time_limit=time_limit,
        clock=clock,
        observe=observe,
    )
    stop = _adapter(agent).parse(payload)
    root = repository_root(stop.cwd) if stop.cwd is not None else None
    return await verify_stop(stop, spec, options, root=root)


async def claude_stop(payload: object, spec: Spec, **options: Any) -> StopDecision:
    """`agent_stop` for Claude Code's Stop and SubagentStop payloads."""
    return await agent_stop(ClaudeStop(), payload, spec, **options)


def _adapter(agent: str | StopAdapter) -> StopAdapter:
    if not isinstance(agent, str):
        return agent
    try:
        return ADAPTERS[agent]
    except KeyError:
        raise ConfigurationError(
            f"'agent' must be one of {tuple(ADAPTERS)} (got {agent!r})"
        ) from None


def read_payload(
    stream: IO[str], *, limit: int = MAX_PAYLOAD_BYTES, timeout: float = STDIN_TIMEOUT
) -> object:
    """The JSON payload on `stream` (the hook's stdin), read with a bound: at most `limit`
    bytes, and to its end within `timeout` seconds; `HookPayloadError` otherwise, or when it
    is not JSON (nested too deeply to read included). An empty stdin is ``null``."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation: no descriptor
        text = stream.read(limit + 1)
        data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    else:
        data = _read_fd(fd, limit, timeout)
    if len(data) > limit:
        raise HookPayloadError(f"the payload on stdin is larger than {limit:,} bytes")
    try:
        return json.loads(data.removeprefix(b"\xef\xbb\xbf") or b"null")
    except RecursionError:
        raise HookPayloadError("the payload on stdin is JSON nested too deeply to read") from None
    except ValueError as exc:
        raise HookPayloadError(f"the payload on stdin is not JSON: {exc}") from None


def _read_fd(fd: int, limit: int, timeout: float) -> bytes:
    """At most `limit` + 1 bytes from `fd` until its end, waiting `timeout` seconds at most."""
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise HookPayloadError(
                f"the payload on stdin did not end within {timeout:g}s (stdin must be closed "
                "after the payload)"
            )
        chunk = os.read(fd, min(65536, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def handle_stop(args: argparse.Namespace) -> int:
    adapter = ADAPTERS[args.agent]
    try:
        payload = read_payload(sys.stdin)  # a byte-order mark before the JSON is dropped
        options = StopOptions(
            state_dir=args.state_dir or default_state_dir(),
            max_blocks=args.max_blocks,
            reentry=args.reentry,
            workspace=args.workspace,
            time_limit=args.timeout,
            observe=args.observe,
        )
    except (HookPayloadError, ConfigurationError, OSError) as exc:
        print(f"harness hook: {exc}", file=sys.stderr)
        return EXIT_BROKEN
    if payload is None:  # an empty stdin: not an agent's stop, nothing to record
        return _broken(adapter, payload)
    # The record starts before anything that can fail or hang: a stop that ends unchecked
    # leaves its trace (`_ledger`).
    started, unrecorded = start_record(
        options.state_dir,
        agent=adapter.agent,
        session_id=_session_hint(payload),
        mode=options.mode,
    )
    if unrecorded is not None:
        print(f"harness hook: {for_terminal(unrecorded)}", file=sys.stderr)
    try:
        stop = adapter.parse(payload)
        located = locate(args.spec, adapter.agent, stop.cwd)
    except HookPayloadError as exc:
        started.error(f"the payload: {exc}")
        print(f"harness hook: {exc}", file=sys.stderr)
        return EXIT_BROKEN
    except SpecNotFound as exc:
        if args.walk_up:  # a user-scope hook, in a folder of no gated project
            started.error(f"not a gated project: {exc}")
            return _answer(adapter, StopDecision(False))
        return _unchecked(adapter, stop, str(exc), options, started)
    if args.walk_up and has_own_hook(adapter.agent, stop.cwd):
        started.error("the working folder's own settings run the stop hook: left to it")
        return _answer(adapter, StopDecision(False))
    started = attrs.evolve(
        started,
        session_id=stop.session_id,
        subagent=stop.subagent,
        root=None if located.root is None else str(located.root),
        cwd=None if stop.cwd is None or stop.cwd == located.root else str(stop.cwd),
    )
    try:
        spec = load_spec(located.spec, purpose="checks")
    except (ConfigurationError, OSError) as exc:
        return _unchecked(adapter, stop, f"the spec does not load: {exc}", options, started)
    watch = SignalCancel()
    try:

        async def decide() -> StopDecision | None:
            return await watch.cancellable(
                lambda: verify_stop(stop, spec, options, root=located.root, started=started)
            )

        decision = anyio.run(decide)
    except (ConfigurationError, HookPayloadError, OSError) as exc:
        started.error(str(exc))
        print(f"harness hook: {exc}", file=sys.stderr)
        return EXIT_BROKEN
    if decision is None:  # a signal stopped the checks
        signal = watch.received.name if watch.received is not None else "a signal"
        started.error(
            f"stopped by {signal} before the checks ended (an agent stops its hook so at the "
            "hook's timeout): the stop went through unchecked",
            outcome="killed",
        )
        return watch.report_stop("harness hook", "the checks were stopped and nothing was decided")
    return _answer(adapter, decision)


def _broken(adapter: StopAdapter, payload: object) -> int:
    try:
        adapter.parse(payload)
    except HookPayloadError as exc:
        print(f"harness hook: {exc}", file=sys.stderr)
    return EXIT_BROKEN


def _unchecked(
    adapter: StopAdapter, stop: StopRequest, why: str, options: StopOptions, started: Started
) -> int:
    """The checks cannot run (`refuse_unchecked`): the person reads why on stderr."""
    print(f"harness hook: the checks cannot run: {for_terminal(why)}", file=sys.stderr)
    return _answer(adapter, refuse_unchecked(stop, why, options, started))


def _answer(adapter: StopAdapter, decision: StopDecision) -> int:
    if decision.note is not None:
        print(f"harness hook: {for_terminal(decision.note, lines=True)}", file=sys.stderr)
    answer = adapter.answer(decision)
    if answer is not None:
        print(json.dumps(answer))
    return EXIT_OK


def _session_hint(payload: object) -> str:
    """The session id the payload names, before it is parsed (for the record's first line)."""
    if isinstance(payload, dict):
        for key in ("session_id", "sessionId", "conversation_id"):
            value = payload.get(key)
            if isinstance(value, str) and value:
                return value
    return "unknown"


def handle_install(args: argparse.Namespace) -> int:
    from ._install import install_hook  # not needed at each stop

    try:
        project = (args.project or Path.cwd()).expanduser()
        spec = args.spec.expanduser()
        named = project / spec if not spec.is_absolute() and (project / spec).exists() else spec
        if not (args.walk_up and not named.exists()):  # a user hook's spec is each project's
            load_spec(named, purpose="checks")  # a hook on a broken spec would only warn later
        done = install_hook(
            args.agent,
            args.spec,
            scope=args.scope,
            project=args.project,
            executable=args.executable,
            max_blocks=args.max_blocks,
            time_limit=args.timeout,
            observe=args.observe,
            record_trust=args.trust,
            dry_run=args.dry_run,
            committed=args.committed,
            walk_up=args.walk_up,
        )
    except (ConfigurationError, OSError) as exc:
        print(f"harness hook install: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        state = "would change" if done.changed else "already has the hook; unchanged"
        print(f"# {done.path} ({state})")
        print(done.text(), end="")
    elif done.changed:
        print(f"harness hook install: added the {args.agent} stop hook to {done.path}")
    else:
        print(f"harness hook install: {done.path} already has this hook; nothing changed")
    for note in done.notes:
        print(f"harness hook install: {note}")
    return EXIT_OK
