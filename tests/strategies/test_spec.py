"""The run spec as a library: load for a purpose, then `Spec.harness()` builds the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import Completed, ScriptedModelClient
from strategies import Ralph, SelfVerifying, Spec, SpecError, load_spec, spec_from_table
from termination import TerminationPolicy

SCRIPT = [
    {
        "tool_calls": [
            {"id": "w", "name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}
        ]
    },
    {"text": "Wrote a.txt."},
]


def _write(tmp_path: Path, body: str) -> Path:
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "run.jsonl").write_text("\n".join(json.dumps(line) for line in SCRIPT) + "\n")
    (tmp_path / "judge.jsonl").write_text(json.dumps({"text": "VERDICT: PASS"}) + "\n")
    spec = tmp_path / "spec.toml"
    spec.write_text(body)
    return spec


CHECKS = '[[checks]]\ntype = "files"\npaths = ["a.txt"]\n'
MODEL = '[model]\ntype = "fixture"\npath = "run.jsonl"\n'
FULL = 'prompt = "write a.txt"\nworkspace = "ws"\n' + MODEL + CHECKS
SELF_VERIFYING = (
    '[strategy]\ntype = "self_verifying"\n[strategy.evaluator]\ntype = "fixture"\n'
    'path = "judge.jsonl"\n'
)


@pytest.mark.anyio
async def test_a_loaded_spec_builds_a_harness_that_runs(tmp_path: Path) -> None:
    """`Spec.harness()` is the run the spec describes: its model, tools, policy, workspace."""
    spec = load_spec(_write(tmp_path, FULL))
    assert spec.prompt == "write a.txt"
    harness = spec.harness()
    assert harness.policy is spec.policy
    assert harness.workspace == tmp_path / "ws"
    result = await harness.run(spec.prompt)
    assert isinstance(result.halt_reason, Completed)
    assert (tmp_path / "ws" / "a.txt").read_text() == "x"


@pytest.mark.parametrize(
    ("body", "purpose", "missing"),
    [
        (CHECKS, "run", "it has no [model] table and no 'prompt' (or 'prompt_file')"),
        ('prompt = "p"\n' + CHECKS, "run", "it has no [model] table ("),
        (MODEL + CHECKS, "task", "it has no 'prompt' (or 'prompt_file') ("),
    ],
)
def test_a_purpose_names_what_the_spec_lacks_when_it_loads(
    tmp_path: Path, body: str, purpose: str, missing: str
) -> None:
    """A spec is complete when loaded: a run needs a prompt and a [model], a board task a
    prompt; the error names the file and every missing piece."""
    path = _write(tmp_path, body)
    with pytest.raises(SpecError) as caught:
        load_spec(path, purpose=purpose)  # type: ignore[arg-type]
    assert str(caught.value).startswith(f"{path}: cannot run this spec: {missing}")


def test_checks_need_only_checks_and_a_task_no_model(tmp_path: Path) -> None:
    """`"checks"` loads a spec with only [[checks]]; `"task"` one with a prompt and no model."""
    assert load_spec(_write(tmp_path, CHECKS), purpose="checks").model is None
    task = spec_from_table(
        {"prompt": "p", "checks": [{"type": "plan"}]}, tmp_path / "t.toml", purpose="task"
    )
    assert task.prompt == "p"
    assert task.purpose == "task"
    with pytest.raises(ValueError, match="purpose must be one of"):
        spec_from_table({"checks": [{"type": "plan"}]}, tmp_path / "t.toml", purpose="later")  # type: ignore[arg-type]


def test_each_harness_gets_fresh_model_and_strategy_handles(tmp_path: Path) -> None:
    """A model client and a strategy's evaluator hold state, so every harness built from one
    spec gets its own; the keywords replace the spec's policy, strategy and transcript."""
    body = FULL + SELF_VERIFYING
    spec = load_spec(_write(tmp_path, body))
    one, two = spec.harness(), spec.harness()
    assert one.model is not two.model
    assert isinstance(one.strategy, SelfVerifying)
    assert isinstance(two.strategy, SelfVerifying)
    assert one.strategy.evaluator is not two.strategy.evaluator
    assert one.strategy.evaluator_must_use_tools  # a spec's default
    policy = TerminationPolicy()
    ralph = Ralph(max_iterations=2)
    model = ScriptedModelClient.from_responses([{"text": "done"}])
    custom = spec.harness(
        model=model, policy=policy, strategy=ralph, transcript=tmp_path / "t.jsonl"
    )
    assert (custom.model, custom.policy, custom.strategy) == (model, policy, ralph)
    assert custom.transcript == tmp_path / "t.jsonl"


def test_wrap_model_sees_the_evaluator(tmp_path: Path) -> None:
    """`wrap_model(client, role)` wraps the extra model a strategy builds (a recording, say)."""
    body = FULL + SELF_VERIFYING
    spec = load_spec(_write(tmp_path, body))
    roles: list[str] = []

    def wrap(client: object, role: str) -> ScriptedModelClient:
        roles.append(role)
        assert isinstance(client, ScriptedModelClient)
        return client

    spec.harness(wrap_model=wrap)
    assert roles == ["evaluator"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (FULL + "[policy]\nmax_rejections = 0\n", "spec.toml: policy: "),
        ("tool_timeout = 0\n" + FULL, "spec.toml: 'tool_timeout' must be"),
        (FULL + '[strategy]\ntype = "ralph"\nmax_iterations = 0\n', "spec.toml: strategy: "),
        (
            'tools = ["write_file"]\n' + FULL + SELF_VERIFYING,
            "spec.toml: strategy.evaluator_must_use_tools is on",
        ),
    ],
)
def test_value_errors_name_the_file_and_table(tmp_path: Path, body: str, message: str) -> None:
    """Values are checked by the classes; the error still names the spec file and table,
    and relations between tables (an evaluator that would have no tools) fail at load."""
    path = _write(tmp_path, body)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert message.replace("spec.toml", str(path)) in str(caught.value)


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        (
            '["read_file", "grep"]',
            "spec.toml: tools[1] 'grep' is not a built-in tool (['edit_file', 'list_files', "
            "'read_file', 'search_files', 'update_plan', 'write_file']) nor a 'module:function' "
            "import path",
        ),
        ('["no_such_module:f"]', "spec.toml: tools[0] 'no_such_module:f' cannot be imported: "),
        ('["run_command"]', "spec.toml: tools[0] 'run_command' is the shell"),
        ("[3]", "spec.toml: tools[0] must be a tool name or 'module:function' (got 3)"),
    ],
)
def test_tool_names_are_checked_at_load(tmp_path: Path, tools: str, message: str) -> None:
    """The tools are checked when the spec loads, for its checks too (a stop blocks on a
    broken spec): a built-in name against the table of names, an import path by importing."""
    path = _write(tmp_path, f"tools = {tools}\n" + FULL)
    for purpose in ("run", "checks"):
        with pytest.raises(SpecError) as caught:
            load_spec(path, purpose=purpose)
        assert message.replace("spec.toml", str(path)) in str(caught.value)


def test_what_a_spec_builds_when_read_is_what_its_tables_would_build(tmp_path: Path) -> None:
    """A spec without [budget], [policy], [[sensors]], [[feedback]] or [pause] builds its
    policy and pause settings, and its built-in tools, when they are first read: each is what
    the empty tables and the names build."""
    from harness import PauseSettings
    from harness.extend import builtin_tools
    from termination import Budget
    from termination.extend import POLICY

    spec = load_spec(_write(tmp_path, 'tools = ["read_file", "edit_file"]\n' + FULL))
    (check,) = spec.checks
    assert spec.policy == TerminationPolicy(
        budget=Budget.from_config({}), completion_check=check, **POLICY.validate({}, "policy")
    )
    assert spec.policy is spec.policy  # built once
    assert spec.check_timeout == spec.policy.check_timeout  # read without the policy
    assert spec.protected is None
    assert not spec.policy.protected
    assert spec.pause == PauseSettings.from_config({}, where="pause")
    builtin = builtin_tools()
    assert spec.tools == (builtin["read_file"], builtin["edit_file"])
    stated = load_spec(
        _write(
            tmp_path,
            FULL + '[policy]\ncheck_timeout = 5\nprotected = ["t/**"]\n[pause]\nmax_pauses = 1\n',
        )
    )
    assert stated.policy.check_timeout == stated.check_timeout == 5
    assert stated.protected is stated.policy.protected
    assert stated.protected
    assert stated.pause.max_pauses == 1


def test_spec_is_public_in_strategies() -> None:
    """The spec is a library piece: `strategies` exports it, next to the loop strategies."""
    import strategies

    assert strategies.Spec is Spec
    assert {"Spec", "SpecError", "load_spec", "spec_from_table"} <= set(strategies.__all__)
