"""A griffe extension for the API reference: the attrs classes' constructor signatures.

griffe reads the source, where an attrs class has no ``__init__`` (attrs writes it at import),
so the reference showed `Harness` without its parameters and its defaults as the source spells
them (``Factory(lambda self: ...)``). For each attrs class this imports the class, reads the
signature attrs generated (`inspect.signature`) and gives the class an ``__init__`` with those
parameters (``merge_init_into_class`` then shows ``Harness(*, model, policy, tools=(), ...)``);
a default made by a factory reads as a call of the factory (``PauseSettings()``), or as
``...`` when the factory is a function, on the parameter and on the field alike. A field
without a docstring of its own is not listed again as an attribute: the signature and the
class's ``Args:`` section describe it.

mkdocs.yml loads it (``extensions: [docs/_griffe_attrs.py]``); `mkdocs build` leaves the file
out of the site (``exclude_docs``).
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

import attrs
from griffe import (
    Class,
    Extension,
    Function,
    ObjectNode,
    Parameter,
    ParameterKind,
    Parameters,
    Visitor,
    dynamic_import,
)

_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: ParameterKind.positional_only,
    inspect.Parameter.POSITIONAL_OR_KEYWORD: ParameterKind.positional_or_keyword,
    inspect.Parameter.VAR_POSITIONAL: ParameterKind.var_positional,
    inspect.Parameter.KEYWORD_ONLY: ParameterKind.keyword_only,
    inspect.Parameter.VAR_KEYWORD: ParameterKind.var_keyword,
}


def _factory_text(default: Any) -> str:
    """How a field's default reads: a factory as its call, a function's as ``...``."""
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        factory = default.factory
        if isinstance(factory, type):
            return f"{factory.__name__}()"
        return "..."
    return repr(default)


class AttrsSignatures(Extension):
    """Gives every attrs class its generated ``__init__``'s signature (see the module)."""

    def on_class_members(
        self, *, node: ast.AST | ObjectNode, cls: Class, agent: Visitor | Any, **kwargs: Any
    ) -> None:
        if isinstance(node, ObjectNode) or "__init__" in cls.members:
            return
        try:
            runtime = dynamic_import(cls.path)
        except ImportError:
            return
        if not attrs.has(runtime):
            return
        fields = {f.alias: f for f in attrs.fields(runtime) if f.init}
        parameters = [Parameter("self", kind=ParameterKind.positional_or_keyword)]
        for name, param in inspect.signature(runtime).parameters.items():
            field = fields.get(name)
            member = cls.members.get(field.name if field is not None else name)
            # The field's annotation as written (a converter's would show its input type).
            annotation: Any = param.annotation if isinstance(param.annotation, str) else None
            if member is not None and not member.is_alias and member.annotation is not None:
                annotation = member.annotation
            default: str | None = None
            if param.default is not inspect.Parameter.empty:
                default = _factory_text(field.default) if field is not None else repr(param.default)
            parameters.append(
                Parameter(
                    name,
                    annotation=annotation,
                    kind=_KINDS[param.kind],
                    default=default,
                )
            )
            if (
                field is not None
                and isinstance(field.default, attrs.Factory)  # type: ignore[arg-type]
                and member is not None
                and not member.is_alias
            ):
                member.value = default  # type: ignore[union-attr]
        # A field without a docstring of its own says nothing the signature and the class's
        # Args do not: it is not listed again as an attribute.
        for field in fields.values():
            member = cls.members.get(field.name)
            if member is not None and not member.is_alias and member.docstring is None:
                cls.del_member(field.name)
        init = Function(
            "__init__",
            lineno=cls.lineno,
            endlineno=cls.lineno,
            parameters=Parameters(*parameters),
            returns="None",
        )
        cls.set_member("__init__", init)
