"""Run specs: a TOML file naming the prompt, workspace, model, strategy, budget and checks.

``load_spec`` (a file) and ``spec_from_table`` (a parsed table) validate a spec in one pass:
the schemas check each table's shape, the classes the spec builds (the policy, its budget,
checks, sensors, the strategy) check the values, and any error becomes one `SpecError` naming
the file, the table and the key. A loaded `Spec` is complete for its `purpose`:

- ``"run"``: a run of its own (`harness run`): it has a ``prompt`` and a ``[model]``;
- ``"task"``: a prompt whose model comes from elsewhere (a board task: the agent brings it);
- ``"checks"``: only the checks are needed (`harness check`, the stop hook, the pytest plugin,
  whose caller brings the model and the task).

`Spec.harness` is the one builder of a `Harness` from a spec. Model clients (the ``[model]``
and an evaluator) are built fresh for each harness, since a client is a handle with state; at
load their tables are checked against their schema. Paths in a spec are relative to the spec
file's folder.
"""

from __future__ import annotations

import importlib
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from attrs import evolve, frozen

from checks import AllOf, CompletionCheck, check_from_config
from harness import ConfigurationError
from harness.extend import (
    BUILTIN_TOOL_NAMES,
    REQUIRED,
    Clock,
    Key,
    Schema,
    SystemClock,
    Variants,
    builtin_tools,
    check_positive,
)

from ._strategy_config import STRATEGIES, budget_table, check_strategy_table, model_tables
from ._tools_config import MCP, TOOLS, shell_tool, tool_names

if TYPE_CHECKING:
    from harness import Compaction, Harness, MCPServer, ModelClient, Notifier, PauseSettings, Tool
    from harness.checkpoints import Checkpointing
    from harness.events import EventSink
    from harness.extend import ProtectedPaths, Strategy
    from termination import Budget, TerminationPolicy

# What a spec does beyond its checks (the model clients, the tools, MCP, notifications, the
# sensors and feedback, checkpoints) is imported where the spec's table asks for it, not with
# this module: the stop hook loads a spec at every stop of an agent, for its checks alone. The
# built-in tools, the termination policy and the pause settings are validated at load and
# built when first read: a spec without a [budget], [policy], [[sensors]], [[feedback]] or
# [pause] table has nothing in them that can fail, and a stop reads none of them.


# The tables a key of the spec links to in the reference, each loaded when it is rendered.
def _checks_tables() -> Variants:
    from checks.extend import CHECKS

    return CHECKS


def _sensor_tables() -> Variants:
    from termination.extend import SENSORS

    return SENSORS


def _feedback_tables() -> Variants:
    from termination.extend import FEEDBACK

    return FEEDBACK


def _pause_table() -> Schema:
    from harness.extend import PAUSE

    return PAUSE


def _notify_table() -> Schema:
    from harness.extend import NOTIFY

    return NOTIFY


def _policy_table() -> Schema:
    from termination.extend import POLICY

    return POLICY


SPEC = Schema(
    "a run spec",
    [
        Key("prompt", "string", "The task. Give `prompt` or `prompt_file`."),
        Key("prompt_file", "string", "A file holding the task, relative to the spec file."),
        Key(
            "workspace",
            "string",
            "The folder the agent works in (an existing folder, relative to the spec file). "
            "`harness run` refuses a spec whose tools or checks work in a workspace and that "
            "names none (neither this, `workspace_template` nor `--workspace`).",
        ),
        Key(
            "workspace_template",
            "string",
            "A folder copied into a fresh temporary workspace for each run (instead of "
            "`workspace`).",
        ),
        Key(
            "transcript",
            ("string", "boolean"),
            "Where the JSONL transcript of events is written; `false` writes none.",
            default_text="`harness run`: a new file in `runs/` beside the spec",
        ),
        Key(
            "system_prompt",
            "string",
            "Replaces the start of the system prompt; what the check means by done is still added.",
            default_text="the harness's",
        ),
        Key(
            "tools",
            ("array", "table"),
            "Tool names: built in (" + ", ".join(f"`{n}`" for n in BUILTIN_TOOL_NAMES) + ") "
            "or `module:function` import paths; or a `[tools]` table, which also turns on "
            "the shell (`run_command`).",
            default=("read_file", "list_files", "write_file"),
            see=TOOLS,
        ),
        Key(
            "mcp",
            "array of tables",
            "MCP servers whose tools the agent gets (stdio commands or streamable HTTP URLs).",
            default=(),
            see=MCP,
        ),
        Key(
            "done_tool",
            "boolean",
            "Offer a `done` tool as an explicit claim of done.",
            default=False,
        ),
        Key("tool_timeout", "number", "Seconds one tool call may take.", default=120.0),
        Key(
            "checkpoints",
            "boolean",
            "Checkpoint the workspace when the run starts, at every rejected claim and at the "
            "end of every Ralph iteration: a commit on a private ref in a git work tree, else a "
            "snapshot (see `harness checkpoints`).",
            default=False,
        ),
        Key(
            "checkpoint_dir",
            "string",
            "Where snapshots are kept when the workspace is not in git (relative to the spec "
            "file).",
            default_text="under $XDG_STATE_HOME",
        ),
        Key(
            "context_window",
            "integer",
            "The model's context window in tokens (for the context_pressure sensor and "
            "`compaction`).",
            default_text="unknown",
        ),
        Key(
            "compaction",
            "string",
            "Keep a long session inside `context_window`: at 75% of it, replace old tool "
            'outputs with a note (`"drop_tool_outputs"`) or have the model summarise the older '
            'turns (`"summarize"`).',
            choices=("drop_tool_outputs", "summarize"),
            default_text="off",
        ),
        Key(
            "model",
            "table",
            "The builder's model; `harness run` needs it, `harness check` and the hook do not.",
            default_text="none",
            see=model_tables,
        ),
        Key(
            "budget", "table", "The run's hard limits.", default_text="unlimited", see=budget_table
        ),
        Key("strategy", "table", "How sessions are driven.", default_text="`loop`", see=STRATEGIES),
        Key(
            "checks",
            "array of tables",
            "The completion check(s); several are combined with `AllOf`.",
            default=REQUIRED,
            see=_checks_tables,
        ),
        Key(
            "sensors",
            "array of tables",
            "Sensors read after every turn.",
            default=(),
            see=_sensor_tables,
        ),
        Key(
            "feedback",
            "array of tables",
            "Feedback providers and their triggers.",
            default=(),
            see=_feedback_tables,
        ),
        Key("policy", "table", "How the completion check is treated.", see=_policy_table),
        Key(
            "pause",
            "table",
            "How a usage limit is waited out.",
            default_text="pause up to 6 hours",
            see=_pause_table,
        ),
        Key(
            "notify",
            ("array of tables", "table"),
            "Webhooks or commands told when the run ends (and, with `on`, when it pauses or "
            "resumes).",
            default=(),
            see=_notify_table,
        ),
    ],
    heading="The spec file",
    help="The top level of a spec (TOML). Paths are relative to the spec file's folder.",
)


Purpose = Literal["run", "task", "checks"]
"""What a spec is loaded for, and so what it must have (see the module's docstring)."""

_PURPOSES: tuple[Purpose, ...] = ("run", "task", "checks")


def _checkpointing(data: Mapping[str, Any], base: Path, where: str) -> Checkpointing | None:
    folder = data.get("checkpoint_dir")
    if not data.get("checkpoints", False):
        if folder is not None:
            raise SpecError(f"{where}: checkpoint_dir is set but checkpoints is not true")
        return None
    from harness.checkpoints import Checkpointing  # loads only for a spec that keeps checkpoints

    if folder is None:
        return Checkpointing()
    return Checkpointing(state_dir=(base / _string(folder, f"{where}: checkpoint_dir")).resolve())


def default_cap() -> Budget:
    """The budget of an unattended run (`harness run`, a board attempt) whose spec sets none:
    nobody watches it, and an agent that never claims done would otherwise run for ever."""
    from termination import Budget  # the policy's package loads where a policy is built

    return Budget(max_turns=100, max_wall_time=3600.0)


def capped(policy: TerminationPolicy) -> TerminationPolicy:
    """`policy`, under `default_cap()` when its budget sets no limit at all."""
    return policy if policy.budget.bounded else evolve(policy, budget=default_cap())


class SpecError(ConfigurationError):
    """A run spec is missing, malformed, or names something that cannot work."""


@frozen
class Spec:
    """A loaded spec: everything needed to build a `Harness` and run it (`Spec.harness`)."""

    path: Path
    prompt: str | None
    """The task; never None when the spec was loaded for a ``"run"`` or a ``"task"``."""
    workspace: Path | None
    workspace_template: Path | None
    transcript: Path | None
    """The ``transcript`` file; None when the spec names none (`harness run` then records
    into `default_transcript`, unless `records` is False)."""
    system_prompt: str | None
    _tools: tuple[str | Tool, ...]
    """The ``tools`` setting, validated: a built-in tool by its name, any other as imported
    (`tools` is the tools themselves)."""
    done_tool: bool
    tool_timeout: float
    context_window: int | None
    compaction: Compaction | None
    model: Mapping[str, Any] | None
    """The ``[model]`` table (validated); never None when loaded for a ``"run"``."""
    strategy: Mapping[str, Any]
    """The ``[strategy]`` table (validated with its nested tables)."""
    _policy: TerminationPolicy | None
    """The policy the spec's tables build; None when it has none of them (`policy` is then
    the default policy around the checks, built when first read)."""
    checks: tuple[CompletionCheck, ...]
    purpose: Purpose = "run"
    checkpoints: Checkpointing | None = None
    """``checkpoints = true`` (with ``checkpoint_dir``): how the run checkpoints its workspace."""
    _pause: PauseSettings | None = None
    """The ``[pause]`` table's settings; None without one (`pause` is then the defaults)."""
    notify: tuple[Notifier, ...] = ()
    """The ``[[notify]]`` notifiers; `Spec.harness` adds them to the run's sinks."""
    mcp: tuple[MCPServer, ...] = ()
    """The ``[[mcp]]`` servers whose tools the agent gets."""
    records: bool = True
    """False when the spec says ``transcript = false``: `harness run` writes no transcript."""
    warnings: tuple[str, ...] = ()
    """What the spec allows but probably does not mean (`harness check` prints them)."""

    @cached_property
    def tools(self) -> tuple[Tool, ...]:
        """The agent's tools, in the order the spec names them."""
        return _built(self._tools)

    @cached_property
    def policy(self) -> TerminationPolicy:
        """The termination policy: the budget, sensors, feedback and ``[policy]`` settings
        around the completion check (the checks, several combined with `AllOf`)."""
        if self._policy is not None:
            return self._policy
        return _default_policy(self.checks, self.strategy)

    @property
    def check_timeout(self) -> float | None:
        """Seconds each check may take (``[policy]``'s `check_timeout`), read without building
        the policy: the stop hook runs the checks and needs nothing else of it."""
        return self._policy.check_timeout if self._policy is not None else DEFAULT_CHECK_TIMEOUT

    @property
    def protected(self) -> ProtectedPaths | None:
        """The paths the agent may not change (``[policy]``'s `protected`), None when the
        spec has no policy tables; read, like `check_timeout`, without building the policy."""
        return self._policy.protected if self._policy is not None else None

    @cached_property
    def pause(self) -> PauseSettings:
        """The ``[pause]`` table: how a usage limit is waited out."""
        if self._pause is not None:
            return self._pause
        from harness import PauseSettings  # a usage limit's settings load for a run

        return PauseSettings()

    def harness(
        self,
        *,
        model: ModelClient | None = None,
        workspace: Path | None = None,
        policy: TerminationPolicy | None = None,
        strategy: Strategy | None = None,
        sinks: Sequence[EventSink] = (),
        transcript: Path | None = None,
        wrap_model: Callable[[ModelClient, str], ModelClient] | None = None,
        clock: Clock | None = None,
        logger: Any = None,
        pause: PauseSettings | None = None,
    ) -> Harness:
        """The `Harness` this spec describes; each keyword replaces the spec's own.

        `model` defaults to a fresh client from ``[model]``, `strategy` to a fresh one from
        ``[strategy]`` (`wrap_model(client, role)` may wrap the extra model it uses, such as a
        recording of the evaluator), `workspace` and `transcript` to the spec's; `clock` and
        `logger` to the harness's own defaults (the system clock, the library's logger).
        """
        from harness import Harness  # the loop loads to run, not to read a spec's checks

        return Harness(
            model=model if model is not None else self.build_model(),
            policy=policy if policy is not None else self.policy,
            tools=self.tools,
            strategy=strategy if strategy is not None else self.build_strategy(wrap_model),
            workspace=workspace if workspace is not None else self.workspace,
            system_prompt=self.system_prompt,
            sinks=(*sinks, *self.notify),
            transcript=transcript if transcript is not None else self.transcript,
            tool_timeout=self.tool_timeout,
            done_tool=self.done_tool,
            context_window=self.context_window,
            compaction=self.compaction,
            checkpoints=self.checkpoints,
            clock=clock if clock is not None else SystemClock(),
            logger=logger,
            pause=pause if pause is not None else self.pause,
            mcp_servers=self.mcp,
        )

    def build_model(
        self, table: Mapping[str, Any] | None = None, *, where: str = "model"
    ) -> ModelClient:
        """The model `table` describes (by default the spec's [model])."""
        if table is None:
            if self.model is None:
                raise SpecError(f'{self.path}: a [model] table is required (type = "...")')
            table = self.model
        from harness import model_from_config  # the providers load when a client is built

        with _named(str(self.path)):
            return model_from_config(
                dict(table), where=f"{self.path}: {where}", base=self.path.parent
            )

    def build_strategy(
        self, wrap_model: Callable[[ModelClient, str], ModelClient] | None = None
    ) -> Strategy:
        """A fresh strategy from the spec's; `wrap_model(client, role)` may wrap any extra
        model it uses."""
        from harness import model_from_config  # the providers load when a client is built

        from ._strategy_config import strategy_from_config

        def build_model(table: Mapping[str, Any], where: str) -> ModelClient:
            model = model_from_config(dict(table), where=where, base=self.path.parent)
            return wrap_model(model, "evaluator") if wrap_model is not None else model

        with _named(str(self.path)):
            return strategy_from_config(
                self.strategy, where=f"{self.path}: strategy", build_model=build_model
            )

    def default_transcript(self, now: float | None = None) -> Path:
        """Where `harness run` records a run whose spec names no transcript: a new file in
        ``runs/`` beside the spec, named for the spec and the UTC time
        (``runs/spec-20260107T221503Z.jsonl``)."""
        import time

        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
        folder = self.path.resolve().parent / "runs"
        candidate = folder / f"{self.path.stem}-{stamp}.jsonl"
        number = 2
        while candidate.exists():  # two runs of one spec in the same second
            candidate = folder / f"{self.path.stem}-{stamp}-{number}.jsonl"
            number += 1
        return candidate

    def require_workspace(self, workspace: Path | None) -> None:
        """A `SpecError` naming the file when the run would have no `workspace` while its
        tools or checks work in one (they would fail at every call and never pass)."""
        if workspace is not None:
            return
        users = [t.name for t in self.tools if t.name in _WORKSPACE_TOOLS]
        users += [f"checks[{i}]" for i, c in enumerate(self.checks) if _reads_workspace(c)]
        if users:
            raise SpecError(
                f"{self.path}: no workspace, but {', '.join(users)} work in one: set "
                'workspace = "FOLDER" (relative to the spec file), workspace_template, or '
                "pass --workspace"
            )

    def preflight(self, workspace: Path | None) -> None:
        """Each check's preflight (its program found, a ``python -m`` module installed), before
        anything starts; an error is a `SpecError` naming the file and the check as the spec
        does (``checks[0]``), not by its class."""
        for i, check in enumerate(self.checks):
            preflight = getattr(check, "preflight", None)
            if preflight is None:
                continue
            try:
                preflight(workspace)
            except ConfigurationError as exc:
                message = str(exc).removeprefix(f"{type(check).__name__}: ")
                raise SpecError(f"{self.path}: checks[{i}]: {message}") from None

    def prepare_workspace(self, override: Path | None = None) -> Path | None:
        """The folder the run works in: the override, the spec's, or a fresh copy of a template."""
        if override is not None:
            return override
        if self.workspace_template is not None:
            import shutil
            import tempfile

            target = Path(tempfile.mkdtemp(prefix="harness-ws-"))
            shutil.copytree(self.workspace_template, target, dirs_exist_ok=True)
            return target
        return self.workspace


def load_spec(
    path: str | Path,
    *,
    purpose: Purpose = "run",
    model_factory: Callable[..., ModelClient] | None = None,
) -> Spec:
    """Read and validate a spec file for `purpose` (``"run"``, ``"task"`` or ``"checks"``)."""
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{file}: no such spec file") from None
    except OSError as exc:
        raise SpecError(f"{file}: cannot read the spec: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{file}: not UTF-8 (byte 0x{exc.object[exc.start]:02x})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{file}: not valid TOML: {exc}") from None
    return spec_from_table(data, file, purpose=purpose, model_factory=model_factory)


def spec_from_table(
    data: Mapping[str, Any],
    file: Path,
    *,
    purpose: Purpose = "run",
    model_factory: Callable[..., ModelClient] | None = None,
) -> Spec:
    """Validate an already-parsed spec for `purpose`; errors name `file`, and paths are
    relative to its folder (a board task file is a spec table plus the task's own keys)."""
    if purpose not in _PURPOSES:
        raise ValueError(f"purpose must be one of {_PURPOSES} (got {purpose!r})")
    where = str(file)
    with _named(where):
        return _spec(data, file, purpose, model_factory)


@contextmanager
def _named(where: str) -> Iterator[None]:
    """The one place a configuration error becomes a `SpecError` naming the file (and, when
    `where` says so, the table): the classes that check values do not know where their
    settings came from."""
    try:
        yield
    except ConfigurationError as exc:
        message = str(exc)
        raise SpecError(message if message.startswith(where) else f"{where}: {message}") from None


def _spec(
    data: Mapping[str, Any],
    file: Path,
    purpose: Purpose,
    model_factory: Callable[..., ModelClient] | None,
) -> Spec:
    where = str(file)
    for guess in ("task", "instructions"):
        if guess in data and "prompt" not in data and "prompt_file" not in data:
            raise SpecError(
                f'{where}: unknown key {guess!r}: the task goes in prompt = "..." (or '
                'prompt_file = "FILE"); `harness init` writes a starter spec'
            )
    SPEC.validate(data, where)
    if "model" in data:
        # Its schema alone: checking the table needs no client, so no provider module.
        model_tables().validate(data["model"], f"{where}: model")
    strategy = data.get("strategy", {"type": "loop"})
    check_strategy_table(strategy, where=f"{where}: strategy")
    base = file.parent
    prompt = _prompt(data, base, where)
    workspace = _path(data.get("workspace"), base, f"{where}: workspace", must_be_dir=True)
    template = _path(
        data.get("workspace_template"), base, f"{where}: workspace_template", must_be_dir=True
    )
    if workspace is not None and template is not None:
        raise SpecError(f"{where}: give 'workspace' or 'workspace_template', not both")
    transcript = data.get("transcript")
    system_prompt = data.get("system_prompt")
    checks = _checks(data, where, model_factory, base)
    policy = _policy(data, where, checks, strategy)
    tool_timeout = data.get("tool_timeout", 120.0)
    context_window = data.get("context_window")
    check_positive("tool_timeout", tool_timeout)  # a value error is named by `_named`
    check_positive("context_window", context_window, integer=True, allow_none=True)
    tools = _tools_setting(data.get("tools", ["read_file", "list_files", "write_file"]), where)
    compaction = _compaction(data)
    if compaction is not None and context_window is None:
        raise SpecError(f"{where}: 'compaction' needs 'context_window' (the model's, in tokens)")
    _evaluator_has_tools(strategy, tools, f"{where}: strategy")
    pause = _pause(data, where)
    excusing = _excusing_checks(data, where)
    if excusing and strategy.get("type") == "best_of":
        raise SpecError(
            f"{excusing[0]}: a best_of run picks its winner by this check, which excuses every "
            "test that fails before the run (baseline = true and no must_pass), so an attempt "
            "that leaves the task's own test failing can win: name the task's tests in "
            "must_pass, or write must_pass = [] to say no failing test is the task"
        )
    spec = Spec(
        path=file,
        prompt=prompt,
        workspace=workspace,
        workspace_template=template,
        transcript=(base / _string(transcript, f"{where}: transcript")).resolve()
        if transcript is not None and not isinstance(transcript, bool)
        else None,
        records=transcript is not False,
        system_prompt=_string(system_prompt, f"{where}: system_prompt")
        if system_prompt is not None
        else None,
        tools=tools,
        done_tool=data.get("done_tool", False),
        tool_timeout=float(tool_timeout),
        context_window=context_window,
        compaction=compaction,
        model=data.get("model"),
        strategy=strategy,
        policy=policy,
        checks=checks,
        purpose=purpose,
        checkpoints=_checkpointing(data, base, where),
        pause=pause,
        mcp=_mcp(data, base, where),
        notify=_notify(data, where),
        warnings=tuple(
            f"{at}: baseline = true and no must_pass: a test that fails before the run never "
            "blocks a claim, even when the task is to make it pass; name the task's tests in "
            "must_pass (or write must_pass = [] to say none is)"
            for at in excusing
        ),
    )
    _require(spec, purpose)
    return spec


# The tools that read or write the workspace: the built-in file tools and the shell.
_WORKSPACE_TOOLS = frozenset(
    ("read_file", "list_files", "search_files", "write_file", "edit_file", "run_command")
)


def _reads_workspace(check: CompletionCheck) -> bool:
    """Whether `check`, or a check it combines, judges the workspace's files (a command or a
    test suite runs in it)."""
    from checks import CommandCheck, FeatureListCheck, FilesCheck, TestSuiteCheck

    inner = getattr(check, "checks", None)
    if isinstance(inner, tuple):
        return any(_reads_workspace(c) for c in inner)
    return isinstance(check, FilesCheck | FeatureListCheck | TestSuiteCheck | CommandCheck)


def _excusing_checks(data: Mapping[str, Any], where: str) -> list[str]:
    """The ``[[checks]]`` tables (``file: checks[N]``) that take a baseline and say nothing
    of `must_pass`: they excuse the test the task is about, since it fails at the baseline. An
    explicit ``must_pass = []`` says the spec means it."""
    return [
        f"{where}: checks[{i}]"
        for i, table in enumerate(data.get("checks", []))
        if table.get("type") == "test_suite"
        and table.get("baseline") is True
        and "must_pass" not in table
    ]


def _compaction(data: Mapping[str, Any]) -> Compaction | None:
    if "compaction" not in data:
        return None
    from harness import Compaction  # loads only for a spec that compacts

    return Compaction(data["compaction"])


def _mcp(data: Mapping[str, Any], base: Path, where: str) -> tuple[MCPServer, ...]:
    if "mcp" not in data:
        return ()
    from ._tools_config import mcp_servers  # MCP's modules load only for a spec with servers

    return mcp_servers(data["mcp"], base, f"{where}: mcp")


def _notify(data: Mapping[str, Any], where: str) -> tuple[Notifier, ...]:
    if "notify" not in data:
        return ()
    from harness.extend import notifiers_from_config  # only a spec that notifies loads them

    return notifiers_from_config(data["notify"], f"{where}: notify")


def _evaluator_has_tools(
    strategy: Mapping[str, Any], tools: tuple[str | Tool, ...], where: str
) -> None:
    """A spec's evaluator must read the work by default, and it gets the read-only tools."""
    looks = strategy.get("type") == "self_verifying" and strategy.get(
        "evaluator_must_use_tools", True
    )
    if looks and not any(t.read_only for t in _built(tools)):
        raise SpecError(
            f"{where}.evaluator_must_use_tools is on (the default), but the evaluator "
            "would have no tools: it gets the spec's read-only tools and `tools` has "
            "none (add read_file or list_files, or set evaluator_must_use_tools = false)"
        )


def _require(spec: Spec, purpose: Purpose) -> None:
    """What `purpose` needs beyond the checks: a prompt, and for a run a [model]."""
    missing = [
        name
        for name, absent in (
            ("[model] table", purpose == "run" and spec.model is None),
            ("'prompt' (or 'prompt_file')", purpose != "checks" and spec.prompt is None),
        )
        if absent
    ]
    if missing:
        raise SpecError(
            f"{spec.path}: cannot run this spec: it has no {' and no '.join(missing)} "
            "(a spec with only [[checks]] serves `harness check` and `harness hook`; "
            'to run it, add e.g. [model] type = "fixture", path = ...)'
        )


def _prompt(data: Mapping[str, Any], base: Path, where: str) -> str | None:
    if "prompt" in data and "prompt_file" in data:
        raise SpecError(f"{where}: give 'prompt' or 'prompt_file', not both")
    if "prompt" in data:
        return _string(data["prompt"], f"{where}: prompt")
    if "prompt_file" in data:
        file = base / _string(data["prompt_file"], f"{where}: prompt_file")
        try:
            return file.read_text(encoding="utf-8")
        except OSError as exc:
            raise SpecError(
                f"{where}: prompt_file {str(file)!r} cannot be read: {exc.strerror}"
            ) from None
        except UnicodeDecodeError as exc:
            raise SpecError(
                f"{where}: prompt_file {str(file)!r} is not UTF-8 "
                f"(byte 0x{exc.object[exc.start]:02x})"
            ) from None
    return None


def _pause(data: Mapping[str, Any], where: str) -> PauseSettings | None:
    if "pause" not in data:
        return None
    from harness import PauseSettings

    return PauseSettings.from_config(
        _table(data["pause"], f"{where}: pause"), where=f"{where}: pause"
    )


def _checks(
    data: Mapping[str, Any],
    where: str,
    model_factory: Callable[..., ModelClient] | None,
    base: Path,
) -> tuple[CompletionCheck, ...]:
    check_tables = data.get("checks", [])
    if not isinstance(check_tables, list) or not check_tables:
        raise SpecError(f"{where}: at least one [[checks]] table is required (type = ...)")

    def factory(table: Mapping[str, Any], where: str) -> ModelClient:
        if model_factory is not None:
            return model_factory(table, where)
        from harness import model_from_config  # the providers load for a judge's table only

        return model_from_config(dict(table), where=where, base=base)

    built: list[CompletionCheck] = [
        check_from_config(
            _table(t, f"{where}: checks[{i}]"), where=f"{where}: checks[{i}]", model_factory=factory
        )
        for i, t in enumerate(check_tables)
    ]
    return tuple(built)


# The tables that build the termination policy: without one, it is the default policy.
_POLICY_TABLES = ("budget", "sensors", "feedback", "policy")
# The default policy's `check_timeout` (`TerminationPolicy`'s own default), for
# `Spec.check_timeout` without the policy.
DEFAULT_CHECK_TIMEOUT = 600.0


def _completion_check(
    checks: tuple[CompletionCheck, ...], strategy: Mapping[str, Any]
) -> CompletionCheck:
    """The checks as one: several are combined with `AllOf`."""
    # A rollback on regression compares the progress of the whole: every check must be asked.
    progress = strategy.get("rollback") == "on_regression"
    return checks[0] if len(checks) == 1 else AllOf(checks, progress=progress)


def _default_policy(
    checks: tuple[CompletionCheck, ...], strategy: Mapping[str, Any]
) -> TerminationPolicy:
    """The policy of a spec with none of `_POLICY_TABLES`."""
    from termination import TerminationPolicy

    return TerminationPolicy(completion_check=_completion_check(checks, strategy))


def _policy(
    data: Mapping[str, Any],
    where: str,
    checks: tuple[CompletionCheck, ...],
    strategy: Mapping[str, Any],
) -> TerminationPolicy | None:
    """The policy the spec's tables build (every value checked), or None when it has none
    of them (`Spec.policy` is then `_default_policy`, built when first read)."""
    if not any(name in data for name in _POLICY_TABLES):
        return None
    from termination import Budget, TerminationPolicy
    from termination.extend import POLICY

    budget = Budget.from_config(
        _table(data.get("budget", {}), f"{where}: budget"), where=f"{where}: budget"
    )
    sensors = [
        _sensor(_table(t, f"{where}: sensors[{i}]"), where=f"{where}: sensors[{i}]")
        for i, t in enumerate(_list(data.get("sensors", []), f"{where}: sensors"))
    ]
    feedback = [
        _feedback(_table(t, f"{where}: feedback[{i}]"), where=f"{where}: feedback[{i}]")
        for i, t in enumerate(_list(data.get("feedback", []), f"{where}: feedback"))
    ]
    options = POLICY.validate(data.get("policy", {}), f"{where}: policy")
    check = _completion_check(checks, strategy)
    with _named(f"{where}: policy"):
        return TerminationPolicy(
            budget=budget, sensors=sensors, feedback=feedback, completion_check=check, **options
        )


def _sensor(table: dict[str, Any], *, where: str) -> Any:
    from termination import sensor_from_config  # the sensors load for a spec that has some

    return sensor_from_config(table, where=where)


def _feedback(table: dict[str, Any], *, where: str) -> Any:
    from termination import feedback_from_config  # the providers load for a spec that has some

    return feedback_from_config(table, where=where)


def _tools_setting(value: object, where: str) -> tuple[str | Tool, ...]:
    """`tools`: a list of names, or a ``[tools]`` table (names, and the shell); a built-in
    tool by its name (`_built` makes it), any other imported."""
    if not isinstance(value, dict):
        return _tools(value, where)
    table = TOOLS.validate(value, f"{where}: tools")
    tools = _tools(tool_names(table), where)
    shell = shell_tool(table, f"{where}: tools")
    return tools if shell is None else (*tools, shell)


def _built(tools: tuple[str | Tool, ...]) -> tuple[Tool, ...]:
    """The tools themselves: the built-in ones made from their names."""
    builtin = builtin_tools() if any(isinstance(t, str) for t in tools) else {}
    return tuple(builtin[t] if isinstance(t, str) else t for t in tools)


def _tools(names: object, where: str) -> tuple[str | Tool, ...]:
    """The tools `names` lists: a built-in one checked against `BUILTIN_TOOL_NAMES` and kept
    by its name (its module loads when the tools are first read), a ``module:function`` one
    imported now (an import that fails is the spec's error)."""
    items = _list(names, f"{where}: tools")
    tools: list[str | Tool] = []
    for i, name in enumerate(items):
        if not isinstance(name, str):
            raise SpecError(
                f"{where}: tools[{i}] must be a tool name or 'module:function' (got {name!r})"
            )
        if name in BUILTIN_TOOL_NAMES:
            tools.append(name)
            continue
        if name == "run_command":
            raise SpecError(
                f"{where}: tools[{i}] 'run_command' is the shell, which is configured, not "
                "listed: use a [tools] table with shell = true"
            )
        if ":" not in name:
            raise SpecError(
                f"{where}: tools[{i}] {name!r} is not a built-in tool "
                f"({sorted(BUILTIN_TOOL_NAMES)}) nor a 'module:function' import path"
            )
        module_name, _, attr = name.partition(":")
        try:
            target = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise SpecError(f"{where}: tools[{i}] {name!r} cannot be imported: {exc}") from None
        from harness import Tool  # a tool's base class loads for a spec that imports one

        tools.append(target if isinstance(target, Tool) else Tool.from_function(target))
    return tuple(tools)


def _path(value: object, base: Path, where: str, *, must_be_dir: bool) -> Path | None:
    if value is None:
        return None
    path = (base / _string(value, where)).resolve()
    if must_be_dir and not path.is_dir():
        raise SpecError(f"{where}: {str(path)!r} is not an existing folder")
    return path


def _string(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{where} must be a non-empty string (got {value!r})")
    return value


def _table(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a table (got {type(value).__name__})")
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise SpecError(f"{where} must be a list (got {type(value).__name__})")
    return value
