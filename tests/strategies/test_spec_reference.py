"""The spec reference: one description per table validates specs and renders the docs page."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

import checks
import harness
import termination
from checks._check_config import CHECKS, SANDBOXES
from harness import ConfigurationError, SessionStateSnapshot
from harness._providers._model_config import MODELS
from harness._providers._tables import PRICE, RETRY
from harness._schema import REQUIRED, Key, Schema, Variants
from harness.extend import PAUSE, SensorReading
from strategies import Ralph, SelfVerifying
from strategies._cli import main
from strategies._cli._reference import COMMAND, render
from strategies._spec import SpecError, load_spec
from strategies._strategy_config import STRATEGIES
from termination._keys import BUDGET, FEEDBACK, POLICY, SENSORS, TRIGGER
from termination._sensor_config import _PROVIDERS, _SENSORS, register_sensor

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "spec-reference.md"


def test_the_committed_page_is_what_the_schemas_render() -> None:
    """docs/spec-reference.md is generated: any key added or changed without regenerating it
    fails here, with the command that fixes it."""
    assert PAGE.read_text(encoding="utf-8") == render(), (
        f"docs/spec-reference.md is out of date: run `{COMMAND}`"
    )


def test_the_command_prints_the_page(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`harness spec-reference` prints the page, or writes it with -o."""
    assert main(["spec-reference"]) == 0
    assert capsys.readouterr().out == render()
    out = tmp_path / "ref.md"
    assert main(["spec-reference", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == render()


# Each table built from a class, and the constructor arguments a spec may not set (objects a
# TOML file cannot hold, or names fixed by the type).
_CLASS_TABLES: list[tuple[Schema, Callable[..., Any], set[str]]] = [
    *[(SENSORS.schemas[kind], factory, set()) for kind, factory in _SENSORS.items()],
    *[(FEEDBACK.schemas[kind], factory, {"trigger"}) for kind, factory in _PROVIDERS.items()],
    (TRIGGER, termination.FeedbackTrigger, set()),
    (BUDGET, termination.Budget, set()),
    (
        POLICY,
        termination.TerminationPolicy,
        {"budget", "sensors", "completion_check", "feedback", "feedback_max_chars"},
    ),
    (PRICE, harness.ModelPrice, set()),
    (RETRY, harness.RetryPolicy, set()),
    (PAUSE, harness.PauseSettings, set()),
    (MODELS.schemas["openai"], harness.OpenAIClient, {"prices", "clock"}),
    (MODELS.schemas["anthropic"], harness.AnthropicClient, {"prices", "clock"}),
    (MODELS.schemas["cli_agent"], harness.CliAgentClient, {"render", "name", "clock"}),
    (SANDBOXES.schemas["local"], checks.LocalSandbox, {"clock"}),
    (SANDBOXES.schemas["bubblewrap"], checks.BubblewrapSandbox, {"clock"}),
    (CHECKS.schemas["feature_list"], checks.FeatureListCheck, set()),
    (CHECKS.schemas["test_suite"], checks.TestSuiteCheck, set()),
    (CHECKS.schemas["command"], checks.CommandCheck, set()),
    (CHECKS.schemas["files"], checks.FilesCheck, set()),
    (CHECKS.schemas["signal"], checks.SignalCheck, set()),
    (CHECKS.schemas["sql_result"], checks.SqlResultCheck, set()),
    (STRATEGIES.schemas["ralph"], Ralph, {"name"}),
    (STRATEGIES.schemas["self_verifying"], SelfVerifying, {"name", "evaluator_tools"}),
]


def _parameters(factory: Callable[..., Any]) -> dict[str, Any]:
    """Keyword name -> default (REQUIRED when it has none, None when it is a factory)."""
    if isinstance(factory, type) and attrs.has(factory):
        found: dict[str, Any] = {}
        for a in attrs.fields(factory):
            if not a.init:
                continue
            default = a.default
            if default is attrs.NOTHING:
                default = REQUIRED
            elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                default = None
            found[a.alias or a.name] = default
        return found
    return {
        p.name: REQUIRED if p.default is inspect.Parameter.empty else p.default
        for p in inspect.signature(factory).parameters.values()
    }


def _same(declared: object, actual: object) -> bool:
    if isinstance(declared, tuple | list) and isinstance(actual, tuple | list):
        return list(declared) == list(actual)
    return declared == actual and type(declared) is type(actual)


@pytest.mark.parametrize(
    ("schema", "factory", "excluded"),
    _CLASS_TABLES,
    ids=[schema.title for schema, _, _ in _CLASS_TABLES],
)
def test_every_constructor_argument_is_described_with_its_default(
    schema: Schema, factory: Callable[..., Any], excluded: set[str]
) -> None:
    """A table's keys are exactly the class's settings, with the class's defaults: a setting
    added to a class without its `Key` line (or a default changed in one place) fails here."""
    parameters = _parameters(factory)
    described = set(schema.names) - excluded
    assert described == set(parameters) - excluded
    for key in schema.keys:
        if key.name in excluded:
            continue
        actual = parameters[key.name]
        if key.required or actual is REQUIRED:
            assert key.required, key.name
            assert actual is REQUIRED, key.name
        elif key.default_text is None:
            assert _same(key.default, actual), (key.name, key.default, actual)


def _every_schema() -> list[Schema]:
    from strategies._spec import SPEC

    schemas: list[Schema] = [SPEC, PRICE, RETRY, BUDGET, TRIGGER, POLICY]
    for family in (MODELS, STRATEGIES, CHECKS, SANDBOXES, SENSORS, FEEDBACK):
        schemas.extend(family.schemas.values())
    return schemas


def test_every_key_is_on_the_page_with_its_help() -> None:
    """No key is left out of the reference, and each says what it does."""
    page = render()
    for schema in _every_schema():
        for key in schema.keys:
            assert key.help, f"{schema.title}: {key.name} has no help"
            assert f"| `{key.name}` |" in page
            assert key.help.replace("|", "\\|") in page


def _spec(tmp_path: Path, body: str) -> Path:
    """A spec with a fixture model; `body`'s top-level keys (before its first table) go first."""
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "script.jsonl").write_text('{"text": "done"}\n', encoding="utf-8")
    top, tables = re.split(r"^(?=\[)", body, maxsplit=1, flags=re.MULTILINE)
    model = '[model]\ntype = "fixture"\npath = "script.jsonl"\n'
    path = tmp_path / "spec.toml"
    path.write_text(f'prompt = "p"\nworkspace = "ws"\n{top}{model}{tables}', encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '[[checks]]\ntype = "always_complete"\n[[sensors]]\ntype = "repeated_tool_call"\n'
            "limt = 3\n",
            "spec.toml: sensors[0]: unknown key 'limt' for sensor 'repeated_tool_call'; "
            "did you mean 'limit'? (valid keys: action, limit, name, type, warn_at)",
        ),
        (
            'tols = ["read_file"]\n[[checks]]\ntype = "always_complete"\n',
            "spec.toml: unknown key 'tols' for a run spec; did you mean 'tools'? (valid keys: ",
        ),
        (
            '[[checks]]\ntype = "signal"\ntokn = "X"\n',
            "spec.toml: checks[0]: unknown key 'tokn' for a signal check; did you mean 'token'?",
        ),
        (
            '[[checks]]\ntype = "feature_lst"\n',
            "spec.toml: checks[0].type must be one of 'always_complete', 'feature_list', "
            "'test_suite', 'command', 'files', 'signal', 'plan', 'sql_result', "
            "'question_answered', 'python', 'all_of', 'any_of' (got 'feature_lst'); "
            "did you mean 'feature_list'?",
        ),
        (
            '[[checks]]\ntype = "always_complete"\n[strategy]\ntype = "ralph"\nmax_iteration = 2\n',
            "spec.toml: strategy: unknown key 'max_iteration' for a Ralph strategy; did you "
            "mean 'max_iterations'? (valid keys: cooldown, iteration_budget, max_iterations, "
            "rollback, type)",
        ),
        (
            '[[checks]]\ntype = "always_complete"\n[policy]\nmax_rejection = 2\n',
            "spec.toml: policy: unknown key 'max_rejection' for the policy; did you mean "
            "'max_rejections'?",
        ),
        (
            '[[checks]]\ntype = "always_complete"\n[budget]\nmax_turn = 2\n',
            "spec.toml: budget: unknown key 'max_turn' for the budget; did you mean 'max_turns'?",
        ),
        (
            '[[checks]]\ntype = "always_complete"\n[policy]\ncheck_timeout = "soon"\n',
            "spec.toml: policy.check_timeout must be a number (got 'soon')",
        ),
        (
            '[[checks]]\ntype = "always_complete"\n[[sensors]]\ntype = "no_progress"\n'
            'action = "stop"\n',
            "spec.toml: sensors[0].action must be one of 'halt', 'warn' (got 'stop')",
        ),
    ],
)
def test_spec_mistakes_name_file_table_and_the_closest_key(
    tmp_path: Path, body: str, message: str
) -> None:
    """A typo in any table of a spec file is refused with the file, the table, a suggestion
    and the valid keys."""
    with pytest.raises(SpecError) as caught:
        load_spec(_spec(tmp_path, body))
    assert str(caught.value).startswith(str(tmp_path / message.split(": ", 1)[0]))
    assert message.split(": ", 1)[1] in str(caught.value)


def test_a_new_key_is_one_line() -> None:
    """A sensor registered with a schema is validated by it and documented from it; adding a
    key to the schema is all a new setting needs."""

    @attrs.frozen
    class Quiet:
        limit: int = 2
        window: int = 5
        name: str = "quiet"

        def read(self, snapshot: SessionStateSnapshot) -> SensorReading:  # pragma: no cover
            raise NotImplementedError

    schema = Schema("sensor 'quiet'", [Key("limit", "integer", "Trips here.", default=2)])
    register_sensor("quiet", Quiet, schema)
    try:
        with pytest.raises(ConfigurationError, match="unknown key 'window'"):
            termination.sensor_from_config({"type": "quiet", "window": 3}, where="s")
        widened = attrs.evolve(
            schema, keys=(*schema.keys, Key("window", "integer", "Turns looked at.", default=5))
        )
        register_sensor("quiet", Quiet, widened)
        built: object = termination.sensor_from_config({"type": "quiet", "window": 3}, where="s")
        assert built == Quiet(window=3)
        assert "| `window` | integer | `5` | Turns looked at. |" in render()
    finally:
        del _SENSORS["quiet"]
        del SENSORS.schemas["quiet"]


def test_a_type_registered_without_a_schema_is_read_off_its_signature() -> None:
    """`register_sensor` without a schema still refuses unknown keys, from the signature."""

    def make(limit: int = 3) -> Any:
        return termination.RepeatedToolCallSensor(limit=limit)

    register_sensor("made", make)
    try:
        made = termination.sensor_from_config({"type": "made", "limit": 5}, where="s")
        assert isinstance(made, termination.RepeatedToolCallSensor)
        assert made.limit == 5
        with pytest.raises(ConfigurationError, match="did you mean 'limit'"):
            termination.sensor_from_config({"type": "made", "limits": 5}, where="s")
    finally:
        del _SENSORS["made"]
        del SENSORS.schemas["made"]


def test_a_schema_refuses_the_wrong_kind_and_a_missing_key() -> None:
    """Kinds are TOML's: a boolean is not a number, an array must hold what it says."""
    schema = Schema(
        "a thing",
        [
            Key("n", "number", "A number.", default=REQUIRED),
            Key("names", "array of strings", "Names."),
        ],
    )
    assert schema.validate({"n": 1.5, "names": ["a"]}, "t") == {"n": 1.5, "names": ["a"]}
    with pytest.raises(ConfigurationError, match=r"^t\.n is required for a thing$"):
        schema.validate({}, "t")
    with pytest.raises(ConfigurationError, match=r"^t\.n must be a number \(got True\)$"):
        schema.validate({"n": True}, "t")
    with pytest.raises(ConfigurationError, match=r"^t\.names must be an array of strings"):
        schema.validate({"n": 1, "names": ["a", 2]}, "t")
    with pytest.raises(ConfigurationError, match=r"^t must be a table"):
        schema.validate([], "t")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="described twice"):
        Schema("dup", [Key("a", "string", "x"), Key("a", "string", "y")])
    with pytest.raises(ValueError, match="unknown kind"):
        Key("a", "str", "x")


def test_variants_without_a_type_use_their_default() -> None:
    """A ``[strategy]`` without ``type`` is the plain loop."""
    assert STRATEGIES.validate({}, "s") == ("loop", {})
    assert isinstance(STRATEGIES, Variants)
