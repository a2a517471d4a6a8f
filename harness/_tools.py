"""Tools: plain functions with a JSON schema derived from their signature.

A sync function runs in a daemon worker thread (so it can block and still be timed out, and a
blocked one abandoned at its deadline never keeps the process from exiting) unless it is
declared ``inline=True``; an async function runs on the event loop. A parameter annotated
`ToolContext` is filled in by the harness and hidden from the model.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, overload

from attrs import field, frozen

from ._clock import Clock
from ._errors import ConfigurationError
from ._messages import ToolCall, ToolSpec
from ._state import SessionStore
from ._threads import run_sync_abandonable
from ._validate import check_positive

F = TypeVar("F", bound=Callable[..., Any])

# A property's declared JSON type, the Python types a single known type allows (else None),
# and whether a bool must be refused although it is an int.
_Rule = tuple[Any, tuple[type, ...] | None, bool] | None

_UNKNOWN: Any = object()  # `_rules` has no entry for the argument

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


@frozen
class ToolContext:
    """What a tool may reach besides its arguments: the workspace, the session store, time."""

    workspace: Path | None
    store: SessionStore
    clock: Clock
    call: ToolCall
    agent: str


class ToolArgumentError(ValueError):
    """The model called a tool with arguments that do not fit its schema."""


@frozen
class Tool:
    """A callable the model may invoke, with the schema it is shown."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    fn: Callable[..., Any] = field(repr=False)
    timeout: float | None = None
    read_only: bool = False
    inline: bool = False
    context_param: str | None = None
    is_async: bool = False
    # `parameters` read once into what `validate` asks on every call: the required names, and
    # per property its declared type with, for a single JSON type, the Python types it allows.
    _required: tuple[str, ...] = field(init=False, repr=False, eq=False)
    _required_set: frozenset[str] = field(init=False, repr=False, eq=False)
    _rules: dict[str, _Rule] = field(init=False, repr=False, eq=False)
    _spec: ToolSpec = field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        props: Mapping[str, Any] = self.parameters.get("properties", {})
        rules: dict[str, _Rule] = {}
        for key, prop in props.items():
            expected = prop.get("type")
            allowed = _JSON_TYPES.get(expected) if isinstance(expected, str) else None
            no_bool = expected in ("integer", "number")
            rules[key] = None if expected is None else (expected, allowed, no_bool)
        required = tuple(self.parameters.get("required", ()))
        object.__setattr__(self, "_required", required)
        object.__setattr__(self, "_required_set", frozenset(required))
        object.__setattr__(self, "_rules", rules)
        object.__setattr__(self, "_spec", ToolSpec(self.name, self.description, self.parameters))

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        read_only: bool = False,
        inline: bool = False,
    ) -> Tool:
        """Build a tool from `fn`, deriving its schema from the signature and docstring."""
        tool_name = name or fn.__name__
        if not _NAME.match(tool_name):
            raise ConfigurationError(f"tool name must match {_NAME.pattern} (got {tool_name!r})")
        check_positive("timeout", timeout, allow_none=True, owner=f"tool {tool_name!r}")
        summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
        schema, context_param = _schema_for(fn, arg_docs)
        return cls(
            name=tool_name,
            description=description if description is not None else summary,
            parameters=schema,
            fn=fn,
            timeout=timeout,
            read_only=read_only,
            inline=inline,
            context_param=context_param,
            is_async=inspect.iscoroutinefunction(fn),
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def validate(self, arguments: Mapping[str, Any]) -> None:
        """Raise `ToolArgumentError` naming the argument when `arguments` break the schema."""
        if not arguments.keys() >= self._required_set:  # one set test for the usual call
            missing = next(name for name in self._required if name not in arguments)
            raise ToolArgumentError(f"missing required argument {missing!r}")
        rules = self._rules
        for key, value in arguments.items():
            rule = rules.get(key, _UNKNOWN)
            if rule is None:
                continue
            if rule is _UNKNOWN:
                raise ToolArgumentError(
                    f"unknown argument {key!r} (expected one of {sorted(rules)})"
                )
            expected, allowed, no_bool = rule
            if allowed is not None:  # one known JSON type: two type tests, no lookups
                if isinstance(value, allowed) and not (no_bool and value.__class__ is bool):
                    continue
            elif _matches(value, expected):
                continue
            raise ToolArgumentError(
                f"argument {key!r} must be {expected} (got {type(value).__name__} {value!r})"
            )

    async def call(
        self, arguments: Mapping[str, Any], context: ToolContext, *, time_limit: float
    ) -> ToolResult:
        """Validate `arguments`, run the tool and render what it returns; never raises.

        A broken argument, an exception and a timeout are each an error result the model
        sees (cancellation from outside still propagates). An async tool runs on the event
        loop and a sync one in a worker thread, each under a deadline scope `time_limit`
        seconds away on the context's clock (the run's, so fixtures replay exactly); a sync
        tool declared ``inline=True`` runs right here, on the loop, where no deadline could
        interrupt it, so it gets none.
        """
        try:
            kwargs = self._kwargs(arguments, context)
            if self.inline and not self.is_async:
                return ToolResult(render_result(self.fn(**kwargs)))
            clock = context.clock
            with clock.deadline_scope(clock.now() + time_limit) as scope:
                if self.is_async:
                    result = await self.fn(**kwargs)
                else:
                    result = await run_sync_abandonable(functools.partial(self.fn, **kwargs))
                return ToolResult(render_result(result))
        except Exception as exc:
            return ToolResult(tool_error(exc), is_error=True)
        # Reached only when the deadline cancelled the scope.
        assert scope.cancelled_caught
        message = f"error: tool {self.name!r} timed out after {time_limit:g}s"
        return ToolResult(message, is_error=True)

    def _kwargs(self, arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        self.validate(arguments)
        kwargs = dict(arguments)
        if self.context_param is not None:
            kwargs[self.context_param] = context
        return kwargs


@frozen
class ToolResult:
    """What a tool call gave the model: the text, and whether it is an error."""

    content: str
    is_error: bool = False


def tool_error(exc: Exception) -> str:
    """Text the model sees for a tool call that raised."""
    return f"error: {type(exc).__name__}: {exc}"


def render_result(result: object) -> str:
    """Text the model sees for a tool's return value."""
    if isinstance(result, str):
        return result
    if result is None:
        return "ok"
    if type(result) is int:  # its JSON text, without the encoder's set-up (a bool is no int)
        return str(result)
    try:
        return _JSON.encode(result)
    except (TypeError, ValueError):
        return repr(result)


_JSON = json.JSONEncoder(ensure_ascii=False, default=str)


@overload
def tool(fn: F, /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    read_only: bool = False,
    inline: bool = False,
) -> Callable[[F], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    read_only: bool = False,
    inline: bool = False,
) -> Tool | Callable[[F], Tool]:
    """Decorator: turn a function into a `Tool` (bare, or with options)."""

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool.from_function(
            f,
            name=name,
            description=description,
            timeout=timeout,
            read_only=read_only,
            inline=inline,
        )

    return wrap(fn) if fn is not None else wrap


def as_tools(items: Sequence[Tool | Callable[..., Any]]) -> dict[str, Tool]:
    """Normalise a list of tools and plain functions into a name -> Tool map."""
    tools: dict[str, Tool] = {}
    for item in items:
        t = item if isinstance(item, Tool) else Tool.from_function(item)
        if t.name in tools:
            raise ConfigurationError(f"two tools are named {t.name!r}")
        tools[t.name] = t
    return tools


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def _matches(value: object, expected: str | list[str]) -> bool:
    if isinstance(expected, str):  # the common case, without building a list
        allowed = _JSON_TYPES.get(expected)
        if allowed is None:
            return True
        if isinstance(value, bool) and expected in ("integer", "number"):
            return False
        return isinstance(value, allowed)
    for kind in expected:
        allowed = _JSON_TYPES.get(kind)
        if allowed is None:
            return True
        if isinstance(value, bool) and kind in ("integer", "number"):
            continue
        if isinstance(value, allowed):
            return True
    return False


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph, and ``name: text`` lines under an ``Args:`` heading."""
    paragraphs = doc.split("\n\n")
    summary = " ".join(paragraphs[0].split()) if doc else ""
    args: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args:
            match = re.match(r"^(\w+)(?:\s*\([^)]*\))?\s*:\s*(.+)$", stripped)
            if match:
                args[match.group(1)] = match.group(2)
            elif not stripped or not line.startswith((" ", "\t")):
                in_args = False
    return summary, args


def _schema_for(
    fn: Callable[..., Any], arg_docs: Mapping[str, str]
) -> tuple[dict[str, Any], str | None]:
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:
        raise ConfigurationError(
            f"cannot read the type hints of tool {fn.__name__!r}: {exc}"
        ) from exc
    props: dict[str, Any] = {}
    required: list[str] = []
    context_param: str | None = None
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigurationError(
                f"tool {fn.__name__!r} may not take *args or **kwargs (parameter {pname!r})"
            )
        annotation = hints.get(pname, Any)
        if annotation is ToolContext:
            context_param = pname
            continue
        schema = _type_schema(annotation, fn.__name__, pname)
        if pname in arg_docs:
            schema["description"] = arg_docs[pname]
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        elif param.default is not None and _jsonable(param.default):
            schema["default"] = param.default
        props[pname] = schema
    result: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        result["required"] = required
    result["additionalProperties"] = False
    return result, context_param


def _jsonable(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _type_schema(tp: Any, fn_name: str, pname: str) -> dict[str, Any]:
    if tp is Any or tp is object:
        return {}
    if tp is str or tp is Path:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    origin = get_origin(tp)
    args = get_args(tp)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        non_null = [a for a in args if a is not type(None)]
        if len(non_null) == 1:
            inner = _type_schema(non_null[0], fn_name, pname)
            if "type" in inner and len(non_null) < len(args):
                inner["type"] = [inner["type"], "null"]
            return inner
        return {"anyOf": [_type_schema(a, fn_name, pname) for a in args]}
    if tp in (list, tuple, set, frozenset) or origin in (
        list,
        tuple,
        set,
        frozenset,
        Sequence,
        typing.Sequence,
    ):
        item = args[0] if args and args[0] is not Ellipsis else Any
        return {"type": "array", "items": _type_schema(item, fn_name, pname)}
    if tp in (dict,) or origin in (dict, Mapping, typing.Mapping):
        return {"type": "object"}
    raise ConfigurationError(
        f"tool {fn_name!r}: parameter {pname!r} has a type the schema cannot express ({tp!r})"
    )
