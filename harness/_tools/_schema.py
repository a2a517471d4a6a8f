"""Tool schemas: the JSON schema a function's signature implies, and the conversion of valid
JSON into the values the function takes.

`schema_for` reads a signature; `_Deriver.derive` maps one annotation to two things at once,
so they cannot drift apart: its JSON schema, and the function (or None) that turns a value
valid under that schema into what the parameter expects. That is where every conversion is:
an `Enum` member from its value, a `Path` from a string, a dataclass instance or a TypedDict
from an object, a tuple or a set from an array, recursively. ``Annotated[T, "text"]`` (or a
metadata object with a ``documentation`` string, as `typing_extensions.Doc`) becomes the
description. `harness._tools._arguments` checks values against the schema before any conversion.
"""

from __future__ import annotations

import contextlib
import enum
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from typing import Annotated, Any, Literal, NotRequired, Required, Union, get_args, get_origin

from .._errors import ConfigurationError
from ._arguments import Invalid, ToolArgumentError, compile_schema

Convert = Callable[[Any], Any]  # a valid JSON value -> the value the parameter expects


def compile_converters(
    converters: Mapping[str, Convert],
) -> Callable[[Mapping[str, Any]], Mapping[str, Any]] | None:
    """One function that converts every argument that needs it (None when none does)."""
    pairs = tuple(converters.items())
    if not pairs:
        return None

    def convert_arguments(arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        kwargs = dict(arguments)
        for name, convert in pairs:
            if name in kwargs:
                kwargs[name] = convert(kwargs[name])
        return kwargs

    return convert_arguments


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph, and ``name: text`` lines under an ``Args:`` heading (or
    ``Arguments:``, ``Parameters:``, ``Attributes:``, ``Keys:``)."""
    paragraphs = doc.split("\n\n")
    summary = " ".join(paragraphs[0].split()) if doc else ""
    args: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:", "Attributes:", "Keys:"):
            in_args = True
            continue
        if in_args:
            match = re.match(r"^(\w+)(?:\s*\([^)]*\))?\s*:\s*(.+)$", stripped)
            if match:
                args[match.group(1)] = match.group(2)
            elif not stripped or not line.startswith((" ", "\t")):
                in_args = False
    return summary, args


def schema_for(
    fn: Callable[..., Any], arg_docs: Mapping[str, str], context_type: type
) -> tuple[dict[str, Any], str | None, dict[str, Convert]]:
    """The object schema of `fn`'s parameters, the name of its `context_type` parameter (hidden
    from the model), and the conversion each parameter's JSON value needs."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ConfigurationError(
            f"cannot read the type hints of tool {fn.__name__!r}: {exc}"
        ) from exc
    props: dict[str, Any] = {}
    required: list[str] = []
    converters: dict[str, Convert] = {}
    context_param: str | None = None
    for pname, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigurationError(
                f"tool {fn.__name__!r} may not take *args or **kwargs (parameter {pname!r})"
            )
        annotation = hints.get(pname, Any)
        if annotation is context_type:
            context_param = pname
            continue
        schema, convert = _Deriver(fn.__name__, pname).derive(annotation)
        if convert is not None:
            converters[pname] = convert
        if pname in arg_docs and "description" not in schema:
            schema["description"] = arg_docs[pname]
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        else:
            _set_default(schema, param.default)
        props[pname] = schema
    result: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        result["required"] = required
    result["additionalProperties"] = False
    return result, context_param, converters


def _set_default(schema: dict[str, Any], default: object) -> None:
    """Show a default to the model when it has a JSON form (None is left out)."""
    if isinstance(default, enum.Enum):
        default = default.value
    elif isinstance(default, PurePath):
        default = str(default)
    elif isinstance(default, (tuple, set, frozenset)):
        items = list(default)
        with contextlib.suppress(TypeError):
            items.sort()
        default = items
    if default is None:
        return
    try:
        json.dumps(default)
    except (TypeError, ValueError):
        return
    schema["default"] = default


_SEQUENCES: tuple[Any, ...] = (list, tuple, set, frozenset, Sequence, typing.Sequence)
_MAPPINGS: tuple[Any, ...] = (dict, Mapping, typing.Mapping)
_SCALARS: dict[Any, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}
_JSON_SCALAR_TYPES = (str, int, float, bool, type(None))


class _Deriver:
    """Maps annotations to (schema, conversion) for one parameter, so an error names it."""

    def __init__(self, fn_name: str, pname: str) -> None:
        self.fn_name = fn_name
        self.pname = pname
        self.expanding: list[type] = []  # the classes being expanded, to refuse recursion

    def fail(self, what: str) -> ConfigurationError:
        return ConfigurationError(f"tool {self.fn_name!r}: parameter {self.pname!r} {what}")

    def derive(self, tp: Any) -> tuple[dict[str, Any], Convert | None]:
        if tp is Any or tp is object:
            return {}, None
        if tp is None or tp is type(None):
            return {"type": "null"}, None
        scalar = _SCALARS.get(tp)
        if scalar is not None:
            return {"type": scalar}, None
        origin = get_origin(tp)
        args = get_args(tp)
        if origin is Annotated:
            return self._annotated(tp)
        if origin in (Required, NotRequired):
            return self.derive(args[0])
        if isinstance(tp, type):
            if issubclass(tp, PurePath):
                return {"type": "string"}, tp
            if _is_pydantic_standard(tp) or _is_pydantic_model(tp):
                return self._pydantic(tp)
            if issubclass(tp, enum.Enum):
                return self._enum(tp)
            if typing.is_typeddict(tp):
                return self._class(tp, typed_dict=True)
            if hasattr(tp, "__dataclass_fields__"):
                return self._class(tp, typed_dict=False)
        if origin is Literal:
            return self._literal(args)
        if origin in (Union, types.UnionType):
            return self._union(args)
        if origin is tuple and (not args or args[-1] is not Ellipsis):
            return self._tuple(args)  # tuple[int, str], or tuple[()]
        if tp in _SEQUENCES or origin in _SEQUENCES:
            return self._array(tp, origin, args)
        if tp in _MAPPINGS or origin in _MAPPINGS:
            return self._mapping(args)
        raise self.fail(f"has a type the schema cannot express ({tp!r})")

    def _pydantic(self, tp: type) -> tuple[dict[str, Any], Convert | None]:
        """A pydantic model, or a type pydantic reads from JSON text (`datetime`, `UUID`,
        `Decimal`, ...): its schema and its conversion come from pydantic's `TypeAdapter`."""
        try:
            from pydantic import TypeAdapter, ValidationError
        except ImportError:
            raise self.fail(
                f"has the type {tp.__name__}, which needs pydantic: "
                "pip install 'completion-harness[pydantic]'"
            ) from None
        adapter: Any = TypeAdapter(tp)
        schema = _inline_refs(adapter.json_schema(), {}, (), self)
        pname = self.pname

        def convert(value: Any) -> Any:
            try:
                return adapter.validate_python(value)
            except ValidationError as exc:
                raise ToolArgumentError(
                    f"argument {pname!r} is not a valid {tp.__name__}: {_first_error(exc)}"
                ) from None

        return schema, convert

    def _annotated(self, tp: Any) -> tuple[dict[str, Any], Convert | None]:
        schema, convert = self.derive(tp.__origin__)
        for meta in tp.__metadata__:
            text = meta if isinstance(meta, str) else getattr(meta, "documentation", None)
            if isinstance(text, str):
                schema = {**schema, "description": text}
                break
        return schema, convert

    def _enum(self, cls: type[enum.Enum]) -> tuple[dict[str, Any], Convert | None]:
        values = [member.value for member in cls]
        schema = self._enum_schema(values, f"enum {cls.__name__}")
        members = {(type(m.value), m.value): m for m in cls}  # a bool is not an int here

        def to_member(value: Any) -> Any:  # a dict lookup, not Enum.__call__ (about 4x slower)
            member = members.get((type(value), value))
            return cls(value) if member is None else member

        return schema, to_member

    def _literal(self, values: tuple[Any, ...]) -> tuple[dict[str, Any], Convert | None]:
        return self._enum_schema(list(values), "Literal"), None

    def _enum_schema(self, values: list[Any], what: str) -> dict[str, Any]:
        for value in values:
            if not isinstance(value, _JSON_SCALAR_TYPES) or isinstance(value, enum.Enum):
                raise self.fail(f"has a {what} value JSON cannot carry ({value!r})")
        kinds = {_json_type(v) for v in values}
        schema: dict[str, Any] = {"enum": values}
        if len(kinds) == 1:
            schema = {"type": kinds.pop(), **schema}
        return schema

    def _union(self, args: tuple[Any, ...]) -> tuple[dict[str, Any], Convert | None]:
        members = [a for a in args if a is not type(None)]
        nullable = len(members) < len(args)
        derived = [self.derive(m) for m in members]
        converts = [c for _, c in derived]
        if len(members) == 1:
            schema = dict(derived[0][0])
            if nullable:
                schema = _nullable(schema)
            inner = converts[0]
            if inner is None:
                return schema, None
            return schema, lambda value: None if value is None else inner(value)
        branches = [s for s, _ in derived]
        if nullable:
            branches.append({"type": "null"})
        schema = {"anyOf": branches}
        if all(c is None for c in converts):
            return schema, None
        chosen = [(compile_schema(s), c) for s, c in derived]

        def convert_union(value: Any) -> Any:
            for check, convert in chosen:  # the first branch the value fits decides
                if check is not None:
                    try:
                        check(value)
                    except Invalid:
                        continue
                return value if convert is None else convert(value)
            return value  # None, for an optional union

        return schema, convert_union

    def _tuple(self, args: tuple[Any, ...]) -> tuple[dict[str, Any], Convert | None]:
        derived = [self.derive(a) for a in args]
        schema: dict[str, Any] = {"type": "array"}
        if derived:
            schema["prefixItems"] = [s for s, _ in derived]
        schema["minItems"] = schema["maxItems"] = len(derived)
        converts = [c for _, c in derived]
        if all(c is None for c in converts):
            return schema, tuple
        pairs = tuple(zip(converts, range(len(converts)), strict=True))
        return schema, lambda value: tuple(value[i] if c is None else c(value[i]) for c, i in pairs)

    def _array(
        self, tp: Any, origin: Any, args: tuple[Any, ...]
    ) -> tuple[dict[str, Any], Convert | None]:
        item_schema, item = self.derive(args[0] if args else Any)
        schema: dict[str, Any] = {"type": "array", "items": item_schema}
        container = tp if origin is None else origin
        build: Callable[[Any], Any] = (
            container if container in (tuple, set, frozenset) else list  # a Sequence: a list
        )
        if item is None:
            if build is list:
                return schema, None
            return schema, build
        return schema, lambda value: build(item(v) for v in value)

    def _mapping(self, args: tuple[Any, ...]) -> tuple[dict[str, Any], Convert | None]:
        schema: dict[str, Any] = {"type": "object"}
        if not args:
            return schema, None
        key, value_type = args
        if key not in (str, Any):
            raise self.fail(f"has a mapping with {key!r} keys, but JSON object keys are strings")
        value_schema, convert = self.derive(value_type)
        if value_schema:
            schema["additionalProperties"] = value_schema
        if convert is None:
            return schema, None
        return schema, lambda value: {k: convert(v) for k, v in value.items()}

    def _class(self, cls: type, *, typed_dict: bool) -> tuple[dict[str, Any], Convert | None]:
        """A TypedDict (the tool receives a dict) or a dataclass (it receives an instance)."""
        if cls in self.expanding:
            raise self.fail(f"has a recursive type ({cls.__name__}), which the schema cannot hold")
        self.expanding.append(cls)
        try:
            return self._fields(cls, typed_dict=typed_dict)
        finally:
            self.expanding.pop()

    def _fields(self, cls: type, *, typed_dict: bool) -> tuple[dict[str, Any], Convert | None]:
        try:
            hints = typing.get_type_hints(cls, include_extras=True)
        except Exception as exc:
            raise self.fail(f"has a type whose hints cannot be read ({cls!r}: {exc})") from exc
        _, docs = parse_docstring(inspect.getdoc(cls) or "")
        props: dict[str, Any] = {}
        required: list[str] = []
        converters: dict[str, Convert] = {}
        if typed_dict:
            required_keys: frozenset[str] = cls.__required_keys__  # type: ignore[attr-defined]
            names = [
                (name, _key_required(hint, name in required_keys), _MISSING)
                for name, hint in hints.items()
            ]
        else:
            names = _dataclass_fields(cls)
        for name, is_required, default in names:
            schema, convert = self.derive(hints.get(name, Any))
            if name in docs and "description" not in schema:
                schema["description"] = docs[name]
            if is_required:
                required.append(name)
            elif default is not _MISSING:
                _set_default(schema, default)
            props[name] = schema
            if convert is not None:
                converters[name] = convert
        schema = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        pairs = tuple(converters.items())
        if typed_dict:
            if not pairs:
                return schema, None
            return schema, lambda value: _converted(value, pairs)
        return schema, lambda value: cls(**_converted(value, pairs))


_MISSING: Any = object()

# Types JSON carries as text that pydantic converts (when it is installed), by module. A module
# not imported yet holds no class an annotation could name, so none is imported for this.
_PYDANTIC_STANDARD = {
    "datetime": ("date", "time", "timedelta"),  # date covers datetime
    "uuid": ("UUID",),
    "decimal": ("Decimal",),
}


def _is_pydantic_standard(tp: type) -> bool:
    for name, classes in _PYDANTIC_STANDARD.items():
        module = sys.modules.get(name)
        if module is not None and issubclass(tp, tuple(getattr(module, c) for c in classes)):
            return True
    return False


def _is_pydantic_model(tp: type) -> bool:
    """A subclass of pydantic's `BaseModel` (pydantic is imported once such a class exists)."""
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and issubclass(tp, pydantic.BaseModel)


def _inline_refs(
    node: Any, defs: Mapping[str, Any], expanding: tuple[str, ...], deriver: _Deriver
) -> Any:
    """`node` with every ``{"$ref": "#/$defs/Name"}`` replaced by that definition, so the
    schema stands alone inside a tool's parameters (a reference is resolved from the root of
    the schema it sits in). A model that contains itself is refused, as a dataclass is."""
    if isinstance(node, list):
        return [_inline_refs(item, defs, expanding, deriver) for item in node]
    if not isinstance(node, dict):
        return node
    if "$defs" in node:
        defs = {**defs, **node["$defs"]}
    out: dict[str, Any] = {}
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in expanding:
            raise deriver.fail(f"has a recursive type ({name}), which the schema cannot hold")
        out.update(_inline_refs(defs[name], defs, (*expanding, name), deriver))
    for key, value in node.items():
        if key not in ("$defs", "$ref"):
            out[key] = _inline_refs(value, defs, expanding, deriver)
    return out


def _first_error(exc: Any) -> str:
    """The first problem of a pydantic `ValidationError`, as the argument errors read."""
    error = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in error.get("loc", ()))
    text = repr(error.get("input"))
    if len(text) > 60:
        text = text[:57] + "..."
    prefix = f"{where}: " if where else ""
    more = exc.error_count() - 1
    tail = f" (and {more} more)" if more else ""
    return f"{prefix}{error['msg']} (got {text}){tail}"


def _dataclass_fields(cls: type) -> list[tuple[str, bool, Any]]:
    """(name, required, default) for each field `cls.__init__` takes."""
    import dataclasses  # only when a tool takes a dataclass, so a plain import stays lean

    found = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        has_default = f.default is not dataclasses.MISSING
        has_factory = f.default_factory is not dataclasses.MISSING
        default = f.default if has_default else _MISSING
        found.append((f.name, not (has_default or has_factory), default))
    return found


def _key_required(hint: Any, declared: bool) -> bool:
    """Whether a TypedDict key is required. Its `Required`/`NotRequired` wrapper decides when
    there is one: Python 3.11 cannot see it in ``__required_keys__`` when annotations are
    strings (``from __future__ import annotations``)."""
    origin = get_origin(hint)
    if origin is Annotated:
        origin = get_origin(hint.__origin__)
    if origin is Required:
        return True
    if origin is NotRequired:
        return False
    return declared


def _converted(value: Mapping[str, Any], pairs: tuple[tuple[str, Convert], ...]) -> dict[str, Any]:
    result = dict(value)
    for name, convert in pairs:
        if name in result:
            result[name] = convert(result[name])
    return result


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema`, also accepting null."""
    if "enum" in schema:
        values = schema["enum"]
        schema["enum"] = values if None in values else [*values, None]
    declared = schema.get("type")
    if declared is None:
        if "enum" in schema:
            return schema
        if "anyOf" in schema:
            schema["anyOf"] = [*schema["anyOf"], {"type": "null"}]
            return schema
        if "const" not in schema:
            return schema  # it accepts anything already
        return {"anyOf": [schema, {"type": "null"}]}
    names = [declared] if isinstance(declared, str) else list(declared)
    if "null" not in names:
        names.append("null")
    schema["type"] = names
    return schema


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "null"
