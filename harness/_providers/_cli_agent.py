"""`CliAgentClient`: a coding agent's command line (``claude -p``, ``codex exec``, ...) as the
model, one process per turn.

Each turn renders a prompt from the request (see `render_prompt`), runs the command in the
run's workspace with the prompt on stdin or as an argument, and returns the command's output as
the assistant's text with no tool calls: every turn is a claim of done, so the completion check
runs after each one and its reason goes into the next turn's prompt. The process tree is
killed on timeout and on cancellation (`run_process`). One that runs out of time returns what
it printed, marked with ``stop_reason="timeout"``, so the check decides and the next turn
carries on.

A turn that reports a usage limit (Claude Code's, Codex's, Gemini CLI's: see
`harness._providers._limit_messages`) raises `UsageLimitError`: the run pauses until the reset
and runs the turn again (a terminal quota halts it). Messages in words are read only from a
short output or a command that failed (an agent's long answer may quote one); Claude Code's
``rate_limit_event`` lines are read from any output. The output is read as the agent printed
it: values of `pass_env` variables whose names look like secrets (`harness._secrets`) are
redacted afterwards, from the answer and any error, never from what the limit scan or a JSON
client's parser reads. Otherwise a command that exits non-zero fails the run with a `ModelError`,
and one that exits 0 having printed nothing, or only an error message, did no work: its turn
is marked ``stop_reason="not_executed"``, which is neither a claim of done nor progress.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from attrs import evolve

from .._clock import Clock, SystemClock
from .._errors import ConfigurationError, ModelError
from .._limits import UsageLimitError
from .._messages import NOT_EXECUTED, ModelRequest, ModelResponse
from .._process._child import DEFAULT_MAX_OUTPUT, run_process
from .._secrets import redact, secret_values
from .._usage import Usage
from .._validate import check_positive

PromptMode = Literal["stdin", "argument"]
PROMPT_FIELD = "{prompt}"
_PASSED = ("TZ",)
"""Passed through when set, besides PATH, HOME and LANG: an agent prints a reset time in its
own time zone, which must be the one the harness reads it in."""
SHORT_OUTPUT = 2000
"""An output at most this long (stripped) may be only a message: a limit or an error."""
_ERROR_LINE = re.compile(r"^\W{0,3}\[?(?:API Error|Error|ERROR|error)\b")


def render_prompt(request: ModelRequest) -> str:
    """The prompt for one turn: system prompt, the task, then what is new since the last turn.

    "New" is every user message after the agent's last answer: on the first turn of a session
    the feedback carried from an earlier iteration, later the completion check's reason (and
    any other harness feedback). The agent's earlier answers are left out: its work is in the
    workspace, and each turn is a fresh process.
    """
    messages = list(request.messages)
    system = request.system
    task_index = next(
        (i for i, m in enumerate(messages) if m.role == "user" and not m.is_feedback), None
    )
    last_answer = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    start = max(last_answer, -1 if task_index is None else task_index) + 1
    parts = [system] if system else []
    if task_index is not None:
        parts.append(messages[task_index].content)
    parts.extend(m.content for m in messages[start:] if m.role in ("user", "tool") and m.content)
    return "\n\n".join(parts)


class CliAgentClient:
    """Runs `argv` once per turn and answers with what it printed.

    `prompt` is ``"stdin"`` (the prompt is written to the command's stdin) or ``"argument"``
    (an argv item equal to ``"{prompt}"`` is replaced by it, or it is appended). The command
    runs in `cwd`, else the run's workspace; it sees only PATH, HOME, LANG and TZ from this
    process, plus the variables named in `pass_env` and those in `env`. Values of `pass_env`
    variables whose names look like secrets (``*_API_KEY``, ``*_TOKEN``...: the rule
    `run_command` uses) are redacted from the answer, after the limit scan. `render` replaces
    `render_prompt`.
    Token usage is not known, so the cost is unknown and a cost budget is refused.
    """

    prices_known = False

    def __init__(
        self,
        argv: Sequence[str],
        *,
        prompt: PromptMode = "stdin",
        timeout: float = 1800.0,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        pass_env: Sequence[str] = (),
        max_output: int = DEFAULT_MAX_OUTPUT,
        render: Callable[[ModelRequest], str] = render_prompt,
        name: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) and a for a in argv):
            raise ConfigurationError(
                f"'argv' must be a non-empty list of non-empty strings (got {argv!r})"
            )
        if prompt not in ("stdin", "argument"):
            raise ConfigurationError(f"'prompt' must be 'stdin' or 'argument' (got {prompt!r})")
        check_positive("timeout", timeout)
        if isinstance(pass_env, str) or not all(isinstance(n, str) and n for n in pass_env):
            raise ConfigurationError(
                f"'pass_env' must be a list of variable names (got {pass_env!r})"
            )
        check_positive("max_output", max_output, integer=True)
        self.argv = tuple(argv)
        self.prompt_mode: PromptMode = prompt
        self.timeout = float(timeout)
        self.cwd = Path(cwd) if cwd is not None else None
        self.env = dict(env or {})
        self.pass_env = tuple(pass_env)
        self.max_output = max_output
        self.render = render
        self.name = name or f"cli:{Path(self.argv[0]).name}"
        self._clock: Clock = clock if clock is not None else SystemClock()

    def bind_clock(self, clock: Clock) -> None:
        """Measure the per-turn timeout on the harness's clock."""
        self._clock = clock

    def command(self, prompt: str) -> list[str]:
        """The argv for one turn."""
        if self.prompt_mode == "stdin":
            return list(self.argv)
        if PROMPT_FIELD in self.argv:
            return [prompt if a == PROMPT_FIELD else a for a in self.argv]
        return [*self.argv, prompt]

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self.run_turn(request)
        return evolve(response, text=self.redact(response.text))

    def redact(self, text: str) -> str:
        """`text` with the values of the secret-looking `pass_env` variables redacted."""
        return redact(text, secret_values(os.environ, self.pass_env))

    async def run_turn(self, request: ModelRequest) -> ModelResponse:
        """One turn, its output as the agent printed it (unredacted: see `complete`); a usage
        limit raises `UsageLimitError`, a failed command `ModelError` (its text redacted)."""
        cwd = self.cwd or request.workspace
        if cwd is None:
            raise ConfigurationError(
                f"{self.name} needs a folder to run in: give the harness a workspace or the "
                "client a 'cwd'"
            )
        prompt = self.render(request)
        # surrogateescape: a non-UTF-8 file name reaches the agent as its own bytes, as it does
        # in an argument.
        stdin = prompt.encode("utf-8", "surrogateescape") if self.prompt_mode == "stdin" else None
        env = {n: os.environ[n] for n in (*_PASSED, *self.pass_env) if n in os.environ}
        env.update(self.env)
        result = await run_process(
            self.command(prompt),
            cwd=cwd,
            env=env,
            timeout=self.timeout,
            clock=self._clock,
            max_output=self.max_output,
            stdin=stdin,
        )
        output = result.output_tail
        text = output.strip()
        short = len(text) <= SHORT_OUTPUT
        failed = result.exit_code != 0 and not result.timed_out
        # Loaded by the first turn: a spec that names an agent client need not read its output.
        from ._limit_messages import find_usage_limit

        limit = find_usage_limit(text, now=time.time(), words=short or failed)
        if limit is not None:
            raise UsageLimitError(evolve(limit, message=self.redact(limit.message)))
        if result.timed_out:
            return ModelResponse(
                text=f"{text}\n\n[{self.name} was stopped after {self.timeout:g}s]",
                usage=Usage(cost_usd=None),
                model=self.name,
                stop_reason="timeout",
            )
        if result.exit_code != 0:
            raise ModelError(
                self.redact(f"{self.name} exited with code {result.exit_code}: {text[-1000:]}"),
                kind="other",
            )
        did_nothing = not text or (short and _ERROR_LINE.match(text) is not None)
        return ModelResponse(
            text=text,
            usage=Usage(cost_usd=None),
            model=self.name,
            stop_reason=NOT_EXECUTED if did_nothing else "exit",
        )

    def __repr__(self) -> str:
        return f"CliAgentClient({list(self.argv)!r}, prompt={self.prompt_mode!r})"
