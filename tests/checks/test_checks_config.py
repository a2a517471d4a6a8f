"""`check_from_config` builds every standard check from a TOML table and names what is wrong."""

from __future__ import annotations

import re
import shutil
import tomllib
from collections.abc import Mapping
from typing import Any

import pytest

from checks import (
    CHECK_TYPES,
    AllOf,
    AlwaysComplete,
    AnyOf,
    BubblewrapSandbox,
    CommandCheck,
    CompletionCheck,
    FeatureListCheck,
    FilesCheck,
    LocalSandbox,
    PlanCheck,
    QuestionAnsweredCheck,
    SignalCheck,
    SqlResultCheck,
    TestSuiteCheck,
    check_from_config,
)
from harness import ConfigurationError, ModelClient, ScriptedModelClient

SPEC = """
[[checks]]
type = "feature_list"
path = "features.json"

[[checks]]
type = "test_suite"
command = "pytest -q"
working_dir = "backend"
timeout = 120
sandbox = "local"
junit_xml = "report.xml"
env = { CI = "1" }

[[checks]]
type = "command"
command = ["make", "lint"]
what = "The linter is clean"

[[checks]]
type = "files"
paths = ["README.md", "dist/*.whl"]
non_empty = true

[[checks]]
type = "signal"
token = "TASK_COMPLETE"

[[checks]]
type = "plan"

[[checks]]
type = "sql_result"
expected_columns = ["name", "total"]
min_rows = 1

[[checks]]
type = "always_complete"

[[checks]]
type = "any_of"
checks = [{ type = "signal" }, { type = "all_of", checks = [{ type = "plan" }] }]
"""


def test_every_type_builds_from_toml() -> None:
    """Each table of a TOML spec becomes the check it describes, with its options."""
    tables = tomllib.loads(SPEC)["checks"]
    built = [check_from_config(t, where=f"checks[{i}]") for i, t in enumerate(tables)]
    expected: list[CompletionCheck] = [
        FeatureListCheck("features.json"),
        TestSuiteCheck(
            "pytest -q",
            working_dir="backend",
            timeout=120,
            sandbox=LocalSandbox(),
            junit_xml="report.xml",
            env={"CI": "1"},
        ),
        CommandCheck(("make", "lint"), what="The linter is clean"),
        FilesCheck(("README.md", "dist/*.whl"), non_empty=True),
        SignalCheck("TASK_COMPLETE"),
        PlanCheck(),
        SqlResultCheck(("name", "total"), 1),
        AlwaysComplete(),
        AnyOf.of(SignalCheck(), AllOf.of(PlanCheck())),
    ]
    assert built == expected


def test_question_answered_builds_its_judge_with_the_factory() -> None:
    """The judge table goes to the model factory with a `where` naming it."""
    seen: list[tuple[Mapping[str, Any], str]] = []
    judge = ScriptedModelClient.from_responses([{"text": "VERDICT: PASS"}])

    def factory(table: Mapping[str, Any], where: str) -> ModelClient:
        seen.append((table, where))
        return judge

    table = {
        "type": "question_answered",
        "question": "Why?",
        "rubric": "Be brief.",
        "judge": {"type": "fixture", "path": "judge.jsonl"},
    }
    check = check_from_config(table, where="spec.toml: checks[0]", model_factory=factory)
    assert check == QuestionAnsweredCheck(judge, "Why?", "Be brief.")
    assert seen == [({"type": "fixture", "path": "judge.jsonl"}, "spec.toml: checks[0].judge")]


def test_question_answered_without_a_factory_is_refused() -> None:
    """Without a way to build the judge model the check cannot exist."""
    table = {"type": "question_answered", "question": "Why?", "judge": {"type": "fixture"}}
    with pytest.raises(ConfigurationError, match=r"^c\[0\]: a question_answered check needs a"):
        check_from_config(table, where="c[0]")


def test_a_test_suites_reruns_come_from_the_spec() -> None:
    """`reruns = 0` turns the flaky reruns off; the default is one."""
    table = {"type": "test_suite", "command": "pytest"}
    assert check_from_config(table, where="c").reruns == 1  # type: ignore[attr-defined]
    off = check_from_config({**table, "reruns": 0}, where="c")
    assert off.reruns == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"type": "nope"}, "c.type must be one of 'always_complete', 'feature_list'"),
        ({}, "c.type must be one of 'always_complete'"),
        ({"type": "signl"}, "c.type must be one of"),
        (
            {"type": "signal", "tokn": "X"},
            "c: unknown key 'tokn' for a signal check; did you mean 'token'? "
            "(valid keys: token, type)",
        ),
        ({"type": "plan", "x": 1}, "c: unknown key 'x' for a plan check (valid keys: type)"),
        ({"type": "test_suite"}, "c.command is required for a test_suite check"),
        (
            {"type": "test_suite", "command": "x", "timeout": "1"},
            "c.timeout must be a number (got '1')",
        ),
        (
            {"type": "test_suite", "command": "x", "timeout": True},
            "c.timeout must be a number (got True)",
        ),
        ({"type": "test_suite", "command": "x", "timeout": -1}, "c: 'timeout' must be a positive"),
        (
            {"type": "test_suite", "command": "x", "reruns": -1},
            "c: 'reruns' must be an integer >= 0 (got -1)",
        ),
        ({"type": "test_suite", "command": "x", "reruns": "1"}, "c.reruns must be an integer"),
        ({"type": "command", "command": "x", "sandbox": "docker"}, "c: unknown sandbox 'docker'"),
        (
            {"type": "command", "command": "x", "sandbox": {"name": "local"}},
            "c.sandbox.type must be one of 'local', 'bubblewrap' (got None)",
        ),
        (
            {"type": "command", "command": "x", "sandbox": {"type": "local", "net": True}},
            "c.sandbox: unknown key 'net' for the local sandbox (valid keys: max_output, type)",
        ),
        ({"type": "files", "paths": ["../x"]}, "c: 'paths' entries are relative to the workspace"),
        ({"type": "sql_result", "min_rows": -2}, "c: 'min_rows' must be an int >= 0"),
        ({"type": "all_of", "checks": []}, "c: AllOf needs at least one check"),
        ({"type": "any_of", "checks": [{"type": "x"}]}, "c.checks[0].type must be one of"),
        ("signal", "c must be a table (got 'signal')"),
    ],
)
def test_mistakes_name_where_and_the_key(table: Any, message: str) -> None:
    """Unknown types and keys, wrong kinds and bad values are errors naming where and what."""
    with pytest.raises(ConfigurationError, match="^" + re.escape(message)):
        check_from_config(table, where="c")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")
def test_a_sandbox_table_passes_its_options() -> None:
    """A sandbox given as a table is built by name with the table's other keys."""
    check = check_from_config(
        {
            "type": "test_suite",
            "command": "pytest",
            "sandbox": {"type": "bubblewrap", "read_only": ["/opt/venv"]},
        },
        where="c",
    )
    assert isinstance(check, TestSuiteCheck)
    assert check.sandbox == BubblewrapSandbox(read_only=("/opt/venv",))


def test_the_type_list_is_complete() -> None:
    """Every documented type is accepted."""
    assert CHECK_TYPES == (
        "all_of",
        "always_complete",
        "any_of",
        "command",
        "feature_list",
        "files",
        "plan",
        "python",
        "question_answered",
        "signal",
        "sql_result",
        "test_suite",
    )
