"""Tools from plain functions: the JSON schema their signature implies, the validation of the
model's arguments against it, and the workspace tools that may not leave the workspace."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness import (
    FakeClock,
    Harness,
    ListSink,
    ScriptedModelClient,
    SessionStore,
    Tool,
    ToolArgumentError,
    ToolCall,
    ToolCalled,
    ToolContext,
    tool,
    workspace_tools,
)
from termination import TerminationPolicy


def props(fn: Any) -> Mapping[str, Any]:
    return Tool.from_function(fn).parameters["properties"]  # type: ignore[no-any-return]


def test_container_and_union_types_map_to_json_schema() -> None:
    """Sequences are arrays of their item type, mappings are objects, unions are anyOf, Path is a
    string, and an unannotated (or Any) parameter accepts anything."""

    def f(
        a: Sequence[int],
        b: tuple[str, ...],
        c: dict[str, int],
        d: int | str,
        e: Path,
        f: Any,
        g: set[float],
    ) -> None:
        """F."""

    assert props(f) == {
        "a": {"type": "array", "items": {"type": "integer"}},
        "b": {"type": "array", "items": {"type": "string"}},
        "c": {"type": "object", "additionalProperties": {"type": "integer"}},
        "d": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "e": {"type": "string"},
        "f": {},
        "g": {"type": "array", "items": {"type": "number"}},
    }
    unannotated = Tool.from_function(lambda x, y=2: x, name="lam")
    assert unannotated.parameters["properties"] == {"x": {}, "y": {"default": 2}}
    assert unannotated.parameters["required"] == ["x"]


def test_names_descriptions_and_defaults() -> None:
    """A tool may be renamed and redescribed; defaults that are not JSON are left out."""

    @tool(name="renamed", description="Custom text.")
    def original(x: int = 3, y: object = object()) -> None:
        """Ignored summary."""

    assert original.name == "renamed"
    assert original.description == "Custom text."
    assert original.parameters["properties"] == {"x": {"type": "integer", "default": 3}, "y": {}}
    assert "required" not in original.parameters


def typed(n: int, ratio: float, flag: bool, items: list[str], maybe: str | None = None) -> str:
    """Typed."""
    return "ok"


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"n": 1, "ratio": 2, "flag": True, "items": []}, None),
        ({"n": 1, "ratio": 0.5, "flag": False, "items": ["a"], "maybe": None}, None),
        ({"ratio": 1.0, "flag": True, "items": []}, "missing required argument 'n'"),
        ({"n": True, "ratio": 1.0, "flag": True, "items": []}, "argument 'n' must be integer"),
        ({"n": 1.5, "ratio": 1.0, "flag": True, "items": []}, "argument 'n' must be integer"),
        ({"n": 1, "ratio": "1", "flag": True, "items": []}, "argument 'ratio' must be number"),
        ({"n": 1, "ratio": 1, "flag": 1, "items": []}, "argument 'flag' must be boolean"),
        ({"n": 1, "ratio": 1, "flag": True, "items": "a"}, "argument 'items' must be array"),
        (
            {"n": 1, "ratio": 1, "flag": True, "items": [], "maybe": 3},
            "argument 'maybe' must be ['string', 'null']",
        ),
        ({"n": 1, "ratio": 1, "flag": True, "items": [], "extra": 1}, "unknown argument 'extra'"),
    ],
)
def test_arguments_are_validated_against_the_schema(
    arguments: dict[str, Any], error: str | None
) -> None:
    """Missing, unknown and mistyped arguments are refused with the argument's name; a bool is
    never an integer or a number."""
    t = Tool.from_function(typed)
    if error is None:
        t.validate(arguments)
    else:
        with pytest.raises(ToolArgumentError, match=error.replace("[", r"\[").replace("]", r"\]")):
            t.validate(arguments)


@pytest.mark.anyio
async def test_a_context_tool_sees_the_run_workspace_store_clock_and_call(tmp_path: Path) -> None:
    """A `ToolContext` parameter receives the run's workspace, store, clock, the call and the
    agent."""
    seen: list[ToolContext] = []

    def probe(ctx: ToolContext) -> str:
        """Probe."""
        seen.append(ctx)
        ctx.store.put(7)
        return "probed"

    clock = FakeClock()
    model = ScriptedModelClient.from_responses(
        [{"tool_calls": [{"id": "p1", "name": "probe"}]}, {"text": "done"}]
    )
    harness = Harness(
        model=model, policy=TerminationPolicy(), tools=[probe], workspace=tmp_path, clock=clock
    )
    await harness.run("probe")
    (ctx,) = seen
    assert ctx.workspace == tmp_path.resolve()  # noqa: ASYNC240
    assert ctx.clock is clock
    assert ctx.call == ToolCall("p1", "probe", {})
    assert ctx.agent == "builder"
    assert isinstance(ctx.store, SessionStore)
    assert ctx.store.frozen()[int] == (7,)


@pytest.mark.anyio
async def test_workspace_tools_stay_inside_the_workspace(tmp_path: Path) -> None:
    """read_file, list_files and write_file work inside the workspace; a path that leaves it is
    an error result the model sees."""
    (tmp_path / "secret.txt").write_text("outside")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    escape = tmp_path / "escape.txt"
    model = ScriptedModelClient.from_responses(
        [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": "a/b.txt", "content": "hi"}}
                ]
            },
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a/b.txt"}}]},
            {"tool_calls": [{"name": "list_files", "arguments": {}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "../secret.txt"}}]},
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": {"path": str(escape), "content": ""}}
                ]
            },
            {"text": "done"},
        ]
    )
    sink = ListSink()
    harness = Harness(
        model=model,
        policy=TerminationPolicy(),
        tools=workspace_tools(),
        workspace=workspace,
        clock=FakeClock(),
        sinks=[sink],
    )
    await harness.run("files")
    results = [(e.content, e.is_error) for e in sink.events if isinstance(e, ToolCalled)]
    assert results[:3] == [("wrote 2 bytes to a/b.txt", False), ("hi", False), ("a/b.txt", False)]
    for content, is_error in results[3:]:
        assert is_error
        assert content.startswith("error: WorkspaceEscape: path ")
        assert "is outside the workspace" in content
    assert not escape.exists()
    assert [t.name for t in workspace_tools() if t.read_only] == ["read_file", "list_files"]


_SCHEMA_TYPES = ["integer", "number", "string", "boolean", "array", "object", "null"]


class _Level(enum.IntEnum):
    LOW = 1


class _Name(str):
    pass


def _json_kinds(value: object) -> set[str]:
    """The JSON types a Python value counts as (the oracle the validator is held to)."""
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int):
        return {"integer", "number"}
    if isinstance(value, float):
        return {"number"}
    if isinstance(value, str):
        return {"string"}
    if value is None:
        return {"null"}
    if isinstance(value, (list, tuple)):
        return {"array"}
    return {"object"} if isinstance(value, dict) else set()


_DECLARED: list[Any] = [*_SCHEMA_TYPES, ["string", "null"], ["integer", "boolean"], None]
_VALUES: list[Any] = [0, 7, True, 1.5, "x", None, [1], (1,), {"k": 1}, _Level.LOW, _Name("n")]


@pytest.mark.parametrize("declared", _DECLARED, ids=str)
@pytest.mark.parametrize("value", _VALUES, ids=repr)
def test_each_value_is_judged_by_its_declared_types(declared: Any, value: Any) -> None:
    """Every declared type against every kind of value: bools are never integers or
    numbers, subclasses count as their base, an untyped property takes anything."""
    schema = {"type": "object", "properties": {"a": {} if declared is None else {"type": declared}}}
    checked = Tool(name="t", description="", parameters=schema, fn=lambda **_: None)
    declared_set = {declared} if isinstance(declared, str) else set(declared or ())
    if declared is None or _json_kinds(value) & declared_set:
        checked.validate({"a": value})
    else:
        with pytest.raises(ToolArgumentError, match="argument 'a' must be"):
            checked.validate({"a": value})


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({}, "missing required argument 'a'"),
        ({"b": 1}, "missing required argument 'a'"),
        ({"a": 1, "c": 2}, "unknown argument 'c'"),
        ({"a": 1}, None),
        ({"a": 1, "b": 2}, None),
    ],
)
def test_names_are_checked_before_values(arguments: dict[str, Any], error: str | None) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a"],
    }
    checked = Tool(name="t", description="", parameters=schema, fn=lambda **_: None)
    if error is None:
        checked.validate(arguments)
    else:
        with pytest.raises(ToolArgumentError, match=error):
            checked.validate(arguments)
