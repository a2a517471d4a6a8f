"""What a fresh process loads: importing the packages and running a plain one-turn session
must not pull in the features it does not use, nor the heavy standard-library modules they
need (a fresh process that runs one turn is a bench target: bench/run.py, W3).

A correctness test about laziness, read from `sys.modules` in a fresh interpreter; it
measures no time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from strategies.board import BoardStore

# The harness's feature modules, loaded where a run is configured with the feature (or a
# spec, a transcript reader, a provider... is first used), never by a plain run.
FEATURES = (
    "harness._providers._agent_clients",
    "harness._tools._builtin",
    "harness._checkpoints._base",
    "harness._providers._cli_agent",
    "harness._loop._compaction",
    "harness._tools._edit",
    "harness._fixtures._fake_clock",
    "harness._checkpoints._git",
    "harness._providers._limit_messages",
    "harness._mcp._server",
    "harness._mcp._connection",
    "harness._fixtures._mcp_replay",
    "harness._mcp._tools",
    "harness._sinks._notify",
    "harness._sinks._otel",
    "harness._fs._path_guard",
    "harness._events._checkpoint",
    "harness._events._context",
    "harness._events._pause",
    "harness._pause_table",
    "harness._tools._plan",
    "harness._process._child",
    "harness._providers",
    "harness._process._reaper",
    "harness._fixtures._recording",
    "harness._reference",
    "harness._schema",
    "harness._tools._shell",
    "harness._checkpoints._snapshot",
    "harness._process._threads",
    "harness._events._reader",
    "harness._events._verifier",
    "harness._verification",
    "harness._fs._workspace",
    "checks._check_config",
    "checks._sandbox",
    "checks._sql",
    "checks._test_suite",
    "termination._feedback",
    "termination._feedback_runner",
    "termination._fingerprint",
    "termination._keys",
    "termination._monitor",
    "termination._sensor_config",
    "strategies._cli",
    "strategies._ralph",
    "strategies._spec",
    "strategies.board",
)

# Standard-library modules only features need. One that the dependencies (asyncio, anyio and
# its event loop backend, attrs, structlog) load by themselves is not counted against us.
HEAVY_STDLIB = (
    "csv",
    "decimal",
    "difflib",
    "email",
    "hashlib",
    "http",
    "http.client",
    "queue",
    "random",
    "shutil",
    "sqlite3",
    "tempfile",
    "tomllib",
    "urllib.request",
    "zoneinfo",
)

PLAIN_RUN = """
import anyio
import checks, harness, strategies, termination

async def add(a: int, b: int) -> int:
    return a + b

model = harness.ScriptedModelClient.from_responses(
    [{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}, {"text": "done"}]
)
policy = termination.TerminationPolicy(
    budget=termination.Budget(max_turns=5),
    sensors=[termination.RepeatedToolCallSensor(), termination.ConsecutiveToolErrorsSensor()],
    completion_check=checks.AlwaysComplete(),
)
h = harness.Harness(model=model, policy=policy, tools=[add], strategy=strategies.Loop())
result = anyio.run(h.run, "Add, then say done.")
assert result.verified, result
"""


def loaded_by(code: str) -> set[str]:
    """The modules in `sys.modules` after `code` runs in a fresh interpreter."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


@pytest.fixture(scope="module")
def by_dependencies() -> set[str]:
    return loaded_by(
        "import asyncio, anyio, attrs, structlog\n"
        "async def nothing() -> None: ...\n"
        "anyio.run(nothing)\n"
    )


def unwanted(loaded: set[str], by_dependencies: set[str]) -> list[str]:
    features = [m for m in loaded if m.startswith(FEATURES)]
    stdlib = [m for m in HEAVY_STDLIB if m in loaded and m not in by_dependencies]
    return sorted(features + stdlib)


@pytest.mark.parametrize(
    "code",
    [
        "import harness",
        "import harness.extend, harness.checkpoints",
        "import checks, harness, strategies, termination",
        PLAIN_RUN,
    ],
    ids=["harness", "audience modules", "four packages", "plain run"],
)
def test_a_plain_run_loads_no_feature_it_does_not_use(code: str, by_dependencies: set[str]) -> None:
    """Importing the packages, and a one-turn run with a tool, load none of the feature
    modules and none of the heavy standard-library modules only features need."""
    assert unwanted(loaded_by(code), by_dependencies) == []


def test_structlog_loads_only_when_a_line_is_printed() -> None:
    """A run in a host that configured no logging drops every line before rendering it, so
    structlog is never imported; once `logging` prints, the lines are structlog's logfmt."""
    assert "structlog" not in loaded_by(PLAIN_RUN)
    assert "structlog" in loaded_by(
        "import logging\nlogging.basicConfig(level=logging.INFO)\n" + PLAIN_RUN
    )


def test_a_configured_feature_loads_its_module(by_dependencies: set[str]) -> None:
    """The guard can fail: configuring a feature loads the modules it is looking for."""
    loaded = loaded_by(
        "import harness, termination\n"
        "harness.Harness(model=harness.ScriptedModelClient.from_responses([]),"
        " policy=termination.TerminationPolicy(), checkpoints=True,"
        " compaction='drop_tool_outputs', context_window=1000)\n"
    )
    assert {"harness._checkpoints._base", "harness._loop._compaction"} <= set(
        unwanted(loaded, by_dependencies)
    )


def test_the_pytest_plugin_imports_nothing_of_the_packages() -> None:
    """pytest imports the plugin in every process of a user who installed the package: it
    loads none of the four packages (nor their dependencies) until a test uses a fixture."""
    loaded = loaded_by("import pytest_completion_harness")
    ours = ("harness", "checks", "termination", "strategies", "anyio", "attr", "structlog")
    assert sorted(m for m in loaded if m.split(".")[0] in ours) == []


# A command's handler modules: building the parser (every command, `--help` included) loads
# none of them; each loads when its command runs.
HANDLERS = (
    "strategies._cli._board_run",
    "strategies._cli._board_status",
    "strategies._cli._check",
    "strategies._cli._checkpoints",
    "strategies._cli._hooks._stop",
    "strategies._cli._hooks._start",
    "strategies._cli._reference",
    "strategies._cli._run",
    "strategies._cli._view",
)
# What the library's run needs and a look at a board does not.
LIBRARY = ("harness", "checks", "termination", "anyio", "structlog", "strategies._spec")


def command(*argv: str, stdin: str | None = None) -> str:
    """Code that runs the `harness` command line on `argv` as a fresh process would."""
    feed = f"import io, sys\nsys.stdin = io.StringIO({stdin!r})\n" if stdin is not None else ""
    return (
        feed + "import contextlib, io\nfrom strategies._cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    main({list(argv)!r})\n"
    )


def ours(loaded: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(
        m for m in loaded if m in prefixes or m.startswith(tuple(p + "." for p in prefixes))
    )


def test_help_imports_no_subcommand_handler() -> None:
    """`harness --help` builds the whole parser from the commands' grammar alone: no handler
    module, none of the library, no event loop."""
    loaded = loaded_by(command("--help"))
    assert "strategies._cli._run_args" in loaded  # the guard sees the parser's modules
    assert ours(loaded, HANDLERS + LIBRARY + ("strategies.board._board",)) == []


def test_board_status_reads_the_database_without_the_library(tmp_path: Path) -> None:
    """`harness board status` imports sqlite3 and the board's reader, and not `harness`, anyio
    or the board's engine: the command is a look at a database, as a fresh process."""
    state = tmp_path / ".board"
    with BoardStore(state / "board.db") as store:  # creates the schema
        store._db.execute(
            "INSERT INTO tasks (id, title, role, priority, file, digest, present, status, "
            "reason, updated_at) VALUES ('t', 'T', 'dev', 0, 't.toml', '', 1, 'failed', "
            "'tests red', 0)"
        )
    loaded = loaded_by(command("board", "status", str(tmp_path), "--events", "3"))
    assert {"sqlite3", "strategies._cli._board_status", "strategies.board._state"} <= loaded
    engine = ("strategies.board._board", "strategies.board._store", "strategies.board._attempt")
    assert ours(loaded, LIBRARY + engine + ("strategies._cli._board_run",)) == []


def test_a_broken_board_is_still_reported_with_its_file(tmp_path: Path) -> None:
    """The error classes load where they are raised: a board that never ran is still a
    refusal naming its database (and that path loads `harness` for the error)."""
    done = subprocess.run(
        [sys.executable, "-m", "strategies", "board", "status", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert str(tmp_path / ".board" / "board.db") in done.stderr


def test_the_stop_hook_loads_no_other_command() -> None:
    """`harness hook claude-stop`, run at every stop of a coding agent, loads its own handler
    and none of the other commands' (the run's progress display, the board)."""
    loaded = loaded_by(command("hook", "claude-stop", "--spec", "missing.toml", stdin="{}"))
    assert "strategies._cli._hooks._stop" in loaded
    others = tuple(h for h in HANDLERS if h != "strategies._cli._hooks._stop")
    extra = (
        "strategies.board",
        "strategies._cli._progress._display",
        "strategies._cli._hooks._install",
    )
    assert ours(loaded, others + extra) == []


def test_the_hook_parser_names_each_adapters_subcommand() -> None:
    """The parser lists the stop hooks without importing the adapters: its table and the
    adapters agree."""
    from strategies._cli._hooks._agents import ADAPTERS
    from strategies._cli._hooks._args import STOP_COMMANDS

    assert {agent: a.subcommand for agent, a in ADAPTERS.items()} == STOP_COMMANDS


def test_the_adapters_hold_constants_without_attrs_classes() -> None:
    """Each stop imports all six adapters: they are plain classes with their agent's constants
    (an attrs class compiles its generated methods when it is made, at every stop)."""
    import attrs

    from strategies._cli._hooks._agents import ADAPTERS

    assert [a for a in ADAPTERS.values() if attrs.has(type(a))] == []
    assert all(a.agent == agent for agent, a in ADAPTERS.items())


# What a spec offers beyond its checks: the model clients, the run's strategies and tools,
# MCP, notifications, sensors and feedback, checkpoints, the board; and the modules of the
# checks the spec below does not have.
BEYOND_CHECKS = (
    "harness._providers._agent_clients",
    "harness._providers._cli_agent",
    "harness._loop._compaction",
    "harness._checkpoints._base",
    "harness._mcp._server",
    "harness._sinks._notify",
    "harness._providers._anthropic",
    "harness._providers._base",
    "harness._providers._loop_clients",
    "harness._providers._openai",
    "checks._judge",
    "checks._last_verdict",
    "checks._sandbox",
    "checks._sql",
    "checks._test_suite",
    "termination._feedback_runner",
    "termination._sensor_config",
    "strategies._loop",
    "strategies._ralph",
    "strategies._self_verifying",
    "strategies.board",
)

CHECKS_SPEC = """\
prompt = "Write report.md."

[model]
type = "fixture"
path = "unused.jsonl"

[[checks]]
type = "files"
paths = ["report.md"]
"""


def test_the_stop_hook_on_a_checks_spec_loads_only_what_its_checks_need(tmp_path: Path) -> None:
    """`harness hook claude-stop`, at every stop of an agent, loads the spec for its checks:
    it builds the files check (and checks the [model] table against its schema) without
    importing the model clients, the strategies, MCP, the other checks, sqlite3 or structlog."""
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "report.md").write_text("# Report\n")
    (tmp_path / "spec.toml").write_text(CHECKS_SPEC)
    payload = {"session_id": "s1", "cwd": str(tmp_path / "workspace"), "stop_hook_active": False}
    payload["last_assistant_message"] = "Done."
    argv = ("hook", "claude-stop", "--spec", str(tmp_path / "spec.toml"))
    state = ("--state-dir", str(tmp_path / "state"))
    loaded = loaded_by(command(*argv, *state, stdin=json.dumps(payload)))
    # The guard sees the check and the schema it validated the [model] table with.
    assert {"checks._files", "harness._providers._model_config"} <= loaded
    assert ours(loaded, BEYOND_CHECKS) == []
    assert sorted({"sqlite3", "structlog", "email"} & loaded) == []


# What a stop whose check is a command does not need: the turn loop and the scripted model
# (a spec builds no `Harness` to be read for its checks), the agent's shell tool (a check's
# sandbox names only its protocol), the baseline cache (a command check keeps no baseline)
# and the other commands' parsers; the built-in tools and a tool's base class (the spec's
# tool names are checked against the table of names), the termination policy (a spec without
# [budget], [policy], [[sensors]] or [[feedback]] has nothing in them to check, and a stop
# reads only its check timeout and protected paths, `Spec.check_timeout`), the pause
# settings (no [pause] table), the protected paths' guard (no protected paths) and the uuid
# module (a record's id is 16 random hex digits).
NOT_FOR_A_STOP = (
    "harness._loop._harness",
    "harness._loop._run",
    "harness._loop._session",
    "harness._fixtures._scripted",
    "harness._tools._shell",
    "harness._tools._base",
    "harness._tools._builtin",
    "harness._tools._edit",
    "harness._tools._plan",
    "harness._pause",
    "harness._pause_table",
    "harness._fs._path_guard",
    "checks._baseline_cache",
    "checks._test_results",
    "termination",
    "strategies._cli._run_args",
    "strategies._cli._board_args",
    "difflib",
    "uuid",
)


def test_a_stop_whose_check_is_a_command_loads_neither_the_loop_nor_the_shell_tool(
    tmp_path: Path,
) -> None:
    """`harness hook claude-stop` on a spec whose one check is ``command = "true"`` (the
    bench's stop, bench/cli.py) runs the command without importing the run's loop, the
    scripted model, the tools, the baseline cache, the parsers of other commands, nor what
    validating and running the spec does not need (`NOT_FOR_A_STOP`)."""
    (tmp_path / "workspace").mkdir()
    (tmp_path / "spec.toml").write_text(
        'prompt = "p"\n\n[[checks]]\ntype = "command"\ncommand = "true"\n'
    )
    payload = {"session_id": "s1", "cwd": str(tmp_path / "workspace"), "stop_hook_active": False}
    payload["last_assistant_message"] = "Done."
    argv = ("hook", "claude-stop", "--spec", str(tmp_path / "spec.toml"))
    state = ("--state-dir", str(tmp_path / "state"))
    loaded = loaded_by(command(*argv, *state, stdin=json.dumps(payload)))
    assert {"checks._command", "harness._process._child"} <= loaded  # the check did run
    assert ours(loaded, NOT_FOR_A_STOP) == []


def test_the_hook_finds_baseline_checks_by_protocol_without_importing_them() -> None:
    """The hook asks a check whether it keeps a baseline (`checks.extend.KeepsBaseline`) or a
    last verdict (`KeepsLastVerdict`), so it needs no check class imported; a test suite with
    a baseline answers yes to both, one without to the second only, a files check no."""
    from checks import FilesCheck, TestSuiteCheck
    from checks.extend import KeepsBaseline, KeepsLastVerdict

    suite = TestSuiteCheck("true", baseline=True)
    assert isinstance(suite, KeepsBaseline)
    assert suite.baseline
    assert isinstance(suite, KeepsLastVerdict)
    plain = TestSuiteCheck("true")
    assert isinstance(plain, KeepsLastVerdict)
    assert plain.fast_reject
    assert not isinstance(FilesCheck(["a.txt"]), KeepsBaseline)
    assert not isinstance(FilesCheck(["a.txt"]), KeepsLastVerdict)
