"""Tools: plain functions with a JSON schema derived from their signature.

A sync function runs in a worker thread (so it can block and still be timed out) unless it is
declared ``inline=True``; an async function runs on the event loop. A parameter annotated
`ToolContext` is filled in by the harness and hidden from the model.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

import anyio.to_thread
from attrs import field, frozen

from ._arguments import compile_arguments
from ._clock import Clock
from ._errors import ConfigurationError
from ._messages import ToolCall, ToolSpec
from ._state import SessionStore
from ._tool_schema import Convert, compile_converters, parse_docstring, schema_for

F = TypeVar("F", bound=Callable[..., Any])

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


@frozen
class ToolContext:
    """What a tool may reach besides its arguments: the workspace, the session store, time."""

    workspace: Path | None
    store: SessionStore
    clock: Clock
    call: ToolCall
    agent: str


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
    # How a parameter's valid JSON value becomes what `fn` takes (an Enum member, a Path, a
    # dataclass...); `from_function` derives it from the annotations.
    converters: Mapping[str, Convert] = field(factory=dict, repr=False, eq=False)
    # `parameters` compiled once into the checker `validate` runs, and into the one the loop
    # runs on every call, which also converts the arguments that need it.
    _check: Callable[[Mapping[str, Any]], Mapping[str, Any]] = field(
        init=False, repr=False, eq=False
    )
    _parse: Callable[[Mapping[str, Any]], Mapping[str, Any]] = field(
        init=False, repr=False, eq=False
    )
    _spec: ToolSpec = field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        convert = compile_converters(self.converters)
        check = compile_arguments(self.parameters)
        parse = check if convert is None else compile_arguments(self.parameters, convert)
        object.__setattr__(self, "_check", check)
        object.__setattr__(self, "_parse", parse)
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
        if timeout is not None and timeout <= 0:
            raise ConfigurationError(f"'timeout' of tool {tool_name!r} must be > 0 (got {timeout})")
        summary, arg_docs = parse_docstring(inspect.getdoc(fn) or "")
        schema, context_param, converters = schema_for(fn, arg_docs, ToolContext)
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
            converters=converters,
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def validate(self, arguments: Mapping[str, Any]) -> None:
        """Raise `ToolArgumentError` naming the argument, and the path inside it, when
        `arguments` break the schema."""
        self._check(arguments)

    def parse_arguments(self, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        """`validate`, then the arguments as `fn` takes them: each converted from JSON where
        its annotation asks (`arguments` itself, uncopied, when none does)."""
        return self._parse(arguments)

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext | None) -> str:
        """Validate, call, and render the result as text. Exceptions propagate."""
        if self.inline and not self.is_async:
            return self.call_inline(arguments, context)
        kwargs = self._kwargs(arguments, context)
        if self.is_async:
            result = await self.fn(**kwargs)
        else:
            result = await anyio.to_thread.run_sync(
                lambda: self.fn(**kwargs), abandon_on_cancel=True
            )
        return render_result(result)

    def call_inline(self, arguments: Mapping[str, Any], context: ToolContext | None) -> str:
        """`invoke` for a sync tool declared ``inline=True``: it runs right here, on the loop."""
        if self.context_param is None:  # the call unpacks into a fresh dict: no copy needed
            return render_result(self.fn(**self._parse(arguments)))
        return render_result(self.fn(**self._kwargs(arguments, context)))

    def run_inline(self, arguments: Mapping[str, Any]) -> tuple[str, bool]:
        """Call an inline sync tool that takes no `ToolContext`, as the loop does: the text
        the model sees and whether it is an error (an exception is rendered, not raised)."""
        try:
            return render_result(self.fn(**self._parse(arguments))), False
        except Exception as exc:
            return tool_error(exc), True

    def _kwargs(self, arguments: Mapping[str, Any], context: ToolContext | None) -> dict[str, Any]:
        kwargs = dict(self._parse(arguments))
        if self.context_param is not None:
            if context is None:
                raise RuntimeError(f"tool {self.name!r} needs a ToolContext")
            kwargs[self.context_param] = context
        return kwargs


def tool_error(exc: Exception) -> str:
    """Text the model sees for a tool call that raised."""
    return f"error: {type(exc).__name__}: {exc}"


def render_result(result: object) -> str:
    """Text the model sees for a tool's return value."""
    if isinstance(result, str):
        return result
    if result is None:
        return "ok"
    if type(result) is int:
        return int.__repr__(result)  # what JSON writes for an int, without building an encoder
    try:
        return _ENCODER.encode(result)
    except (TypeError, ValueError):
        return repr(result)


# `json.dumps` with options builds a new encoder on every call; this is that encoder, once.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


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
