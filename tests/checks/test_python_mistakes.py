"""Mistakes made from Python get errors as good as a spec's: the setting named, what was
expected and what came, and a pointer to the fix."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from checks import FeatureListCheck
from harness import (
    ConfigurationError,
    FixtureError,
    Harness,
    ScriptedModelClient,
    read_file,
    workspace_tools,
)
from strategies import SelfVerifying
from termination import TerminationPolicy


def _model() -> ScriptedModelClient:
    return ScriptedModelClient.from_responses([{"text": "done"}])


def _harness(**options: Any) -> Harness:
    return Harness(model=_model(), policy=TerminationPolicy(), **options)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: _harness(tools=["read_file"]),
            "tools[0] is the string 'read_file', not a tool: pass the tool itself "
            "(from harness import read_file; or tools=workspace_tools()",
        ),
        (
            lambda: _harness(tools=[read_file, "pkg.tools:search"]),
            "tools[1] is the string 'pkg.tools:search', not a tool: pass the tool itself "
            "(import it; 'module:function' names are for spec files)",
        ),
        (
            lambda: _harness(tools=["search"]),
            "tools[0] is the string 'search', not a tool: pass the tool itself (a function",
        ),
        (lambda: _harness(tools=[3]), "tools[0] must be a Tool or a function (got int 3)"),
        (
            lambda: _harness(tools=read_file),
            "'tools' must be a list of tools or functions (got Tool Tool(name='read_file'",
        ),
        (lambda: _harness(workspace=3), "'workspace' must be a path (got int 3)"),
        (lambda: _harness(transcript=3.5), "'transcript' must be a path (got float 3.5)"),
        (lambda: _harness(system_prompt=["a"]), "'system_prompt' must be a string (got list"),
        (lambda: _harness(done_tool="yes"), "'done_tool' must be True or False (got str 'yes')"),
        (lambda: _harness(clock=3), "'clock' must be a Clock (SystemClock(), FakeClock(), ...)"),
        (lambda: _harness(sinks=[print]), "sinks[0] must be an event sink, with emit(event)"),
        (
            lambda: TerminationPolicy(check_before_first_turn="no"),  # type: ignore[arg-type]
            "'check_before_first_turn' must be True or False (got str 'no')",
        ),
        (
            lambda: SelfVerifying(evaluator=_model(), evaluator_prompt=None),  # type: ignore[arg-type]
            "'evaluator_prompt' must be a string (the system prompt) (got NoneType None)",
        ),
        (
            lambda: SelfVerifying(
                evaluator=_model(),
                evaluator_tools=["read_file"],  # type: ignore[list-item]
            ),
            "evaluator_tools[0] is the string 'read_file', not a tool",
        ),
        (
            lambda: FeatureListCheck(Path("features.json")),  # type: ignore[arg-type]
            "'path' must be a path in the workspace, as a string (got PosixPath",
        ),
    ],
)
def test_a_python_mistake_names_the_setting_what_was_expected_and_what_came(
    make: Callable[[], object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        make()


def test_the_right_values_still_build() -> None:
    def search(query: str) -> str:
        """Search."""
        return query

    harness = _harness(tools=[*workspace_tools(), search], workspace=Path.cwd(), sinks=())
    assert harness.workspace == Path.cwd()


def test_a_misspelt_fixture_key_suggests_the_right_one(tmp_path: Path) -> None:
    """A typo in a fixture line names the file, the line and the key, and the key it meant."""
    path = tmp_path / "run.jsonl"
    path.write_text('{"text": "a"}\n{"text": "b", "dealy": 2}\n')
    with pytest.raises(FixtureError) as caught:
        ScriptedModelClient.from_jsonl(path)
    assert str(caught.value).startswith(
        f"{path}:2 field 'dealy': unknown key; did you mean 'delay'? (expected some of ["
    )
