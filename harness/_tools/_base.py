"""Tools: plain functions with a JSON schema derived from their signature.

A sync function runs in a daemon worker thread (so it can block and still be timed out, and a
blocked one abandoned at its deadline never keeps the process from exiting) unless it is
declared ``inline=True``; an async function runs on the event loop. A parameter annotated
`ToolContext` is filled in by the harness and hidden from the model.
"""

from __future__ import annotations

import datetime
import functools
import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from attrs import field, frozen

from .._clock import Clock
from .._errors import ConfigurationError
from .._messages import ToolCall, ToolSpec
from .._state import SessionStore
from .._validate import check_positive, got
from ._arguments import compile_arguments
from ._schema import Convert, compile_converters, parse_docstring, schema_for

if TYPE_CHECKING:
    from .._protected import ProtectedPaths

F = TypeVar("F", bound=Callable[..., Any])

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


@frozen
class ToolContext:
    """What a tool may reach besides its arguments: the workspace, the session store, time,
    and the protected paths a tool that writes must refuse (`ProtectedPaths.rule_for`)."""

    workspace: Path | None
    store: SessionStore
    clock: Clock
    call: ToolCall
    agent: str
    protected: ProtectedPaths | None = None


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
        check_positive("timeout", timeout, allow_none=True, owner=f"tool {tool_name!r}")
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
                    # Loaded by the first sync tool: its worker threads are for such tools.
                    from .._process._threads import run_sync_abandonable

                    result = await run_sync_abandonable(functools.partial(self.fn, **kwargs))
                return ToolResult(render_result(result))
        except Exception as exc:
            return ToolResult(tool_error(exc), is_error=True)
        # Reached only when the deadline cancelled the scope.
        assert scope.cancelled_caught
        message = f"error: tool {self.name!r} timed out after {time_limit:g}s"
        return ToolResult(message, is_error=True)

    def _kwargs(self, arguments: Mapping[str, Any], context: ToolContext) -> Mapping[str, Any]:
        parsed = self._parse(arguments)
        if self.context_param is None:
            return parsed  # `fn(**parsed)` copies it; no copy of our own
        return {**parsed, self.context_param: context}


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


def _jsonable(value: object) -> object:
    """A value the JSON encoder cannot take as it is: a pydantic model's JSON form, a date's
    ISO text, else its `str`."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return str(value)


_JSON = json.JSONEncoder(ensure_ascii=False, default=_jsonable)


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


def as_tools(items: Sequence[Tool | Callable[..., Any]], *, name: str = "tools") -> dict[str, Tool]:
    """Normalise a list of tools and plain functions into a name -> Tool map; a mistake (a
    tool's name where the tool belongs, a lone tool) is a `ConfigurationError` saying so."""
    if isinstance(items, Tool | str) or callable(items):
        raise ConfigurationError(
            f"{name!r} must be a list of tools or functions (got {got(items)}); "
            f"wrap it in a list: {name}=[...]"
        )
    if not isinstance(items, Sequence):
        raise ConfigurationError(
            f"{name!r} must be a list of tools or functions (got {got(items)})"
        )
    tools: dict[str, Tool] = {}
    for index, item in enumerate(items):
        if isinstance(item, str):
            raise ConfigurationError(_named_not_given(name, index, item))
        if not isinstance(item, Tool) and not callable(item):
            raise ConfigurationError(
                f"{name}[{index}] must be a Tool or a function (got {got(item)})"
            )
        t = item if isinstance(item, Tool) else Tool.from_function(item)
        if t.name in tools:
            raise ConfigurationError(f"two tools are named {t.name!r}")
        tools[t.name] = t
    return tools


_BUILT_IN = ("read_file", "list_files", "write_file", "update_plan")


def _named_not_given(name: str, index: int, text: str) -> str:
    """The error for a tool given by its name, as a spec does, where Python needs the tool."""
    message = f"{name}[{index}] is the string {text!r}, not a tool: pass the tool itself"
    if text in _BUILT_IN:
        return (
            f"{message} (from harness import {text}; or tools=workspace_tools() for read_file, "
            "list_files and write_file)"
        )
    if ":" in text:
        return f"{message} (import it; 'module:function' names are for spec files)"
    return f"{message} (a function, or Tool.from_function(f))"
