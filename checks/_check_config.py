"""`check_from_config`: any standard check from a TOML table, e.g. ``{type = "feature_list"}``.

Every table has a ``type`` and that type's keys; an unknown type or key, or a value of the
wrong kind, is a `ConfigurationError` naming `where` and the key. ``all_of``/``any_of`` take
``checks = [...]`` tables, built recursively. ``question_answered`` needs a ``judge`` model
table, which `model_factory(table, where)` turns into a `ModelClient`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from harness import ConfigurationError, ModelClient
from harness.extend import REQUIRED, Key, Schema, Variants

from ._compose import AllOf, AnyOf
from ._protocol import CompletionCheck

if TYPE_CHECKING:
    from ._sandbox import SandboxProvider

# Each check's module loads when a table names its type, not with this registry: the stop
# hook builds its checks at every stop of an agent, and a spec with a files check must not
# pay for the test suite's parsers, sqlite3 or the sandboxes.
_CLASSES: dict[str, tuple[str, str]] = {
    "always_complete": ("._always", "AlwaysComplete"),
    "feature_list": ("._feature_list", "FeatureListCheck"),
    "test_suite": ("._test_suite", "TestSuiteCheck"),
    "command": ("._command", "CommandCheck"),
    "files": ("._files", "FilesCheck"),
    "signal": ("._signal", "SignalCheck"),
    "plan": ("._plan_check", "PlanCheck"),
    "sql_result": ("._sql", "SqlResultCheck"),
}


def _model_tables() -> Variants:
    """The judge's table schema, `MODELS`, loaded only when the reference links to it."""
    from harness.extend import MODELS

    return MODELS


ModelFactory = Callable[[Mapping[str, Any], str], ModelClient]

SANDBOXES = Variants(
    "sandbox",
    {
        "local": Schema(
            "the local sandbox",
            [Key("max_output", "integer", "Bytes of output kept (the tail).", default=65536)],
            help="Its own process group with a minimal environment; the whole tree is killed "
            "on timeout or cancellation.",
        ),
        "bubblewrap": Schema(
            "the bubblewrap sandbox",
            [
                Key(
                    "read_only",
                    "array of strings",
                    "More absolute paths bound read-only "
                    "(a virtualenv outside the workspace, say).",
                    default=(),
                ),
                Key("executable", "string", "The `bwrap` program.", default="bwrap"),
                Key("max_output", "integer", "Bytes of output kept (the tail).", default=65536),
            ],
            help="`bwrap`: a read-only system, no network, only the workspace writable "
            "(`bwrap` is also accepted as the type).",
        ),
    },
    help="A check's `sandbox`: a name, or a table such as "
    '`sandbox = { type = "bubblewrap", read_only = ["/opt/venv"] }`.',
)
_SANDBOX = Key(
    "sandbox",
    ("string", "table"),
    'Where the command runs: `"local"`, `"bubblewrap"`, or a table with `type` and its settings.',
    default_text='`"local"`',
    see=SANDBOXES,
)
_COMMAND_KEYS = (
    Key(
        "command",
        ("string", "array of strings"),
        "The command: a shell line, or an argv array (no shell).",
        default=REQUIRED,
    ),
    Key("working_dir", "string", "The folder it runs in, inside the workspace.", default="."),
    _SANDBOX,
    Key("env", "table", "Extra environment variables (string values).", default_text="none"),
)
CHECKS = Variants(
    "checks",
    {
        "always_complete": Schema(
            "an always_complete check", [], help="`AlwaysComplete`: done when the agent says so."
        ),
        "feature_list": Schema(
            "a feature_list check",
            [
                Key(
                    "path",
                    "string",
                    "The feature list, a JSON file in the workspace.",
                    default="feature_list.json",
                ),
                Key(
                    "max_runs",
                    "integer",
                    "Runs sharing this check whose baselines are kept.",
                    default=64,
                ),
            ],
            help='`FeatureListCheck`: every feature has `"passes": true`; a feature removed '
            "or reworded since the run started is refused.",
        ),
        "test_suite": Schema(
            "a test_suite check",
            [
                *_COMMAND_KEYS[:2],
                Key("timeout", "number", "Seconds the suite may take.", default=600.0),
                *_COMMAND_KEYS[2:],
                Key(
                    "junit_xml",
                    "string",
                    "A JUnit XML report the command writes (a workspace "
                    "path), read for the names of failing tests.",
                ),
                Key(
                    "baseline",
                    "boolean",
                    "Run the suite before the agent's first turn; a claim then passes when "
                    "nothing that passed breaks and no new test fails (older failures do not "
                    "block). Needs output that names every test (pytest -rA or -v, unittest "
                    "-v, go test -v or -json, node --test, cargo test) or `junit_xml`.",
                    default=False,
                ),
                Key(
                    "must_pass",
                    "array of strings",
                    "Tests that must pass, named as the check reports them or by the end "
                    "of that name (`test_add` for `tests/test_calc.py::test_add`).",
                    default=(),
                ),
                Key(
                    "max_runs",
                    "integer",
                    "Baselines kept, for this many of the newest runs that share the check.",
                    default=64,
                ),
                Key(
                    "fast_reject",
                    "boolean",
                    "At a claim, first run only the tests that failed at the last verdict and "
                    "the `must_pass` tests (by name: pytest, unittest, go test, cargo test, "
                    "node --test); one still failing rejects the claim without the rest of "
                    "the suite. Only the whole suite accepts.",
                    default=True,
                ),
                Key(
                    "baseline_cache",
                    "boolean",
                    "Keep the baseline in the user's cache folder, keyed by the command, its "
                    "sandbox and the workspace's content, so runs on the same content take it "
                    "once (`COMPLETION_HARNESS_CACHE` names another folder). Its failing tests "
                    "are run again, alone, before they excuse anything.",
                    default=True,
                ),
                Key(
                    "reruns",
                    "integer",
                    "When the suite fails (and at the baseline), run the failing tests again, "
                    "alone, on the same code, up to this many times; a test that fails and "
                    "then passes is flaky: reported apart, it blocks nothing and fixes "
                    "nothing, and a flaky `must_pass` test leaves the task unverified. 0 "
                    "turns it off.",
                    default=1,
                ),
            ],
            help="`TestSuiteCheck`: the test command exits 0 (or, with `baseline`, breaks "
            "nothing that passed before the run); otherwise the reason names the failing "
            "tests (pytest, unittest, go, node, cargo, JUnit XML) and the output's tail.",
        ),
        "command": Schema(
            "a command check",
            [
                *_COMMAND_KEYS[:2],
                Key("timeout", "number", "Seconds the command may take.", default=120.0),
                *_COMMAND_KEYS[2:],
                Key(
                    "what",
                    "string",
                    "What the command verifies, in words: the description the agent reads.",
                    default_text="the command",
                ),
            ],
            help="`CommandCheck`: a verify command exits 0.",
        ),
        "files": Schema(
            "a files check",
            [
                Key(
                    "paths",
                    ("array of strings", "string"),
                    "Required files or folders (globs allowed), inside the workspace.",
                    default=REQUIRED,
                ),
                Key("non_empty", "boolean", "Each must also have content.", default=False),
            ],
            help="`FilesCheck`: required artifacts exist inside the workspace.",
        ),
        "signal": Schema(
            "a signal check",
            [
                Key(
                    "token",
                    "string",
                    "The line the agent's final text must contain.",
                    default="<promise>DONE</promise>",
                )
            ],
            help="`SignalCheck`: the agent's own final text has the signal as an exact line.",
        ),
        "plan": Schema(
            "a plan check", [], help="`PlanCheck`: every step of the session's plan is done."
        ),
        "sql_result": Schema(
            "a sql_result check",
            [
                Key(
                    "expected_columns",
                    "array of strings",
                    "Columns the result must have (any case, any order).",
                    default_text="any",
                ),
                Key("min_rows", "integer", "Rows the result must have.", default_text="1"),
            ],
            help="`SqlResultCheck`: the latest result of the agent's SQL tool has those columns "
            "and rows.",
        ),
        "question_answered": Schema(
            "a question_answered check",
            [
                Key("question", "string", "The question the answer must answer.", default=REQUIRED),
                Key(
                    "judge",
                    "table",
                    "The judge's model table.",
                    default=REQUIRED,
                    see=_model_tables,
                ),
                Key("rubric", "string", "What a good answer has, for the judge."),
            ],
            help="`QuestionAnsweredCheck`: an LLM judge gives exactly one `VERDICT: PASS`; "
            "anything unclear, or a judge error, is a reason.",
        ),
        "python": Schema(
            "a python check",
            [
                Key(
                    "function",
                    "string",
                    "`package.module:name`: a `CompletionCheck`, an `async def check(state)`, "
                    "or a callable that returns a check (the module is imported as Python "
                    "imports it: from `sys.path`).",
                    default=REQUIRED,
                ),
            ],
            help="A check of your own, written in Python. Every other key of the table is "
            "passed to the callable as a keyword argument (to an `async def check(state, ...)` "
            "at every claim, after the state); a `CompletionCheck` named directly takes no "
            "keys.",
            open=True,
        ),
        "all_of": Schema(
            "an all_of check",
            [
                Key(
                    "checks",
                    "array of tables",
                    "The checks, each a table like this one.",
                    default=REQUIRED,
                ),
                Key(
                    "progress",
                    "boolean",
                    "Ask every child even after a reason, so that the progress of the whole "
                    'is measured (what `rollback = "on_regression"` compares).',
                    default=False,
                ),
                Key(
                    "parallel",
                    "boolean",
                    "Ask the children at once, under the check's deadline (for children that "
                    "share no state: commands that write different files, file checks, "
                    "signals); the verdict is still the first reason in declared order.",
                    default=False,
                ),
            ],
            help="`AllOf`: every child passes; it stops at the first reason unless "
            "`progress` is asked for.",
        ),
        "any_of": Schema(
            "an any_of check",
            [
                Key(
                    "checks",
                    "array of tables",
                    "The checks, each a table like this one.",
                    default=REQUIRED,
                )
            ],
            help="`AnyOf`: one child passes (stops at the first pass).",
        ),
    },
    help="The completion check, run only when the agent claims done. Several tables are "
    "combined with `AllOf` (which stops at the first reason, unless the strategy rolls back "
    "on regression: then every check runs, to measure the progress of the whole).",
)
CHECK_TYPES = tuple(sorted(CHECKS.schemas))


def check_from_config(
    table: Mapping[str, Any],
    *,
    where: str,
    model_factory: ModelFactory | None = None,
) -> CompletionCheck:
    """Build the check `table` describes; errors name `where` and the key at fault."""
    kind, options = CHECKS.validate(table, where)
    try:
        return _build(kind, options, where, model_factory)
    except ConfigurationError as exc:
        if str(exc).startswith(where):
            raise
        raise ConfigurationError(f"{where}: {exc}") from None


def _sandbox(value: object, where: str) -> SandboxProvider:
    from ._sandbox import sandbox_by_name  # only a check that runs a command needs it

    if isinstance(value, str):
        return sandbox_by_name(value)
    assert isinstance(value, dict)
    table = {**value, "type": "bubblewrap"} if value.get("type") == "bwrap" else value
    name, options = SANDBOXES.validate(table, where)
    return sandbox_by_name(name, **options)


def _build(
    kind: str, options: dict[str, Any], where: str, model_factory: ModelFactory | None
) -> CompletionCheck:
    if "sandbox" in options:
        options["sandbox"] = _sandbox(options["sandbox"], f"{where}.sandbox")
    if "command" in options and isinstance(options["command"], list):
        options["command"] = tuple(options["command"])
    if kind in _CLASSES:
        module, name = _CLASSES[kind]
        made: Callable[..., CompletionCheck] = getattr(
            importlib.import_module(module, __package__), name
        )
        return made(**options)
    if kind == "python":
        return _python_check(options, where)
    if kind in ("all_of", "any_of"):
        children = [
            check_from_config(child, where=f"{where}.checks[{i}]", model_factory=model_factory)
            for i, child in enumerate(options["checks"])
        ]
        if kind == "all_of":
            return AllOf(
                children,
                progress=options.get("progress", False),
                parallel=options.get("parallel", False),
            )
        return AnyOf(children)
    assert kind == "question_answered"
    if model_factory is None:
        raise ConfigurationError(
            f"{where}: a question_answered check needs a judge model, but no model factory "
            "was given to build one"
        )
    from ._judge import QuestionAnsweredCheck  # the judge's prompts load with a judge

    judge = model_factory(options["judge"], f"{where}.judge")
    return QuestionAnsweredCheck(judge, options["question"], options.get("rubric"))


def _python_check(options: dict[str, Any], where: str) -> CompletionCheck:
    """The check a ``type = "python"`` table names: ``function = "package.module:name"``."""
    spec = options.pop("function")
    at = f"{where}.function"
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigurationError(f"{at} must be 'package.module:name' (got {spec!r})")
    try:
        target: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = f"no module named {exc.name!r}" if exc.name else str(exc)
        raise ConfigurationError(f"{at}: cannot import {module_name!r}: {missing}") from None
    except Exception as exc:  # the module itself is broken: say how, not a traceback
        raise ConfigurationError(
            f"{at}: importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ConfigurationError(
                f"{at}: {module_name!r} has no attribute {attribute!r} (got {spec!r})"
            )
        target = getattr(target, part)
    if isinstance(target, CompletionCheck) and not isinstance(target, type):
        if options:
            raise ConfigurationError(
                f"{at}: {spec!r} is a check, not a function that makes one, so it takes no "
                f"keys (got {sorted(options)})"
            )
        return target
    if not callable(target):
        raise ConfigurationError(
            f"{at}: {spec!r} is neither a CompletionCheck nor callable "
            f"(it is a {type(target).__name__})"
        )
    if inspect.iscoroutinefunction(target):
        return _function_check(target, options, spec, at)
    try:
        made = target(**options)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {spec}: {exc}") from None
    except Exception as exc:  # user code: reported, never a traceback
        raise ConfigurationError(
            f"{where}: calling {spec}({_keywords(options)}) failed: {type(exc).__name__}: {exc}"
        ) from None
    if inspect.isawaitable(made):
        if inspect.iscoroutine(made):
            made.close()  # never awaited: close it so no warning follows
        raise ConfigurationError(
            f"{at}: {spec!r} is async; the function must return a CompletionCheck, not an "
            "awaitable (make it a plain def; the check's own check() is the async part)"
        )
    if not isinstance(made, CompletionCheck):
        raise ConfigurationError(
            f"{at}: {spec!r} returned {type(made).__name__}, not a CompletionCheck "
            "(an object with async check(state) and description())"
        )
    return made


def _function_check(target: Any, options: dict[str, Any], spec: str, at: str) -> CompletionCheck:
    """A bare ``async def check(state, ...)``: the check itself, called with the state and the
    table's other keys at every claim (they must fit its signature, checked now)."""
    from ._function_check import FunctionCheck

    try:
        inspect.signature(target).bind(None, **options)
    except TypeError as exc:
        raise ConfigurationError(
            f"{at}: {spec!r} is an async check, called as {spec}(state"
            f"{''.join(f', {k}=...' for k in options)}), which does not fit it: {exc}"
        ) from None
    except ValueError:  # no signature to read (a builtin): called as it is
        pass
    # Named as the spec names it: `checks[0] (module:name)`, not "FunctionCheck".
    place = at.removesuffix(".function").rpartition(": ")[2]
    return FunctionCheck(target, options, label=f"{place} ({spec})")


def _keywords(options: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in options.items())
