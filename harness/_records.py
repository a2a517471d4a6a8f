"""Frozen attrs classes that are cheap to build, for the values the turn loop makes every turn.

An attrs ``@frozen`` class forbids assignment by overriding ``__setattr__``, so its
``__init__`` must fill each slot through ``object.__setattr__``: a C call per field that
costs several times a plain attribute store. A turn builds about ten such values (the
request, two messages, three events, a usage total, the snapshot); built this way a
seven-field `Message` takes about 310 ns instead of 680 ns.

`fast_init` replaces the ``__init__`` of such a class with one that, for the duration of the
call, turns the new instance into a *builder*: a subclass that adds no slots and keeps
Python's plain attribute stores. It fills the fields with ordinary stores and turns the
instance back into the frozen class before returning. ``__class__`` assignment between
classes of the same layout is a supported CPython operation (it checks the layouts match);
nothing else can see the instance until ``__init__`` returns, and from then on it is frozen
as before. Everything else stays attrs': equality, hashing, ``repr``, ``evolve``, pickling.

Only plain fields are supported (a default or a factory; no validators, converters or
``init=False``) and no ``__attrs_post_init__``: anything else is refused when the class is
defined, so a field that needs attrs' machinery cannot silently skip it.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import attrs

T = TypeVar("T")

_NO_VALUE = object()
_HOOKS = ("__attrs_pre_init__", "__attrs_post_init__")


def fast_init(cls: type[T]) -> type[T]:
    """Give the frozen, slotted attrs class `cls` an ``__init__`` that stores at plain speed.

    Apply it on top of ``@frozen``. A subclass that does not define its own ``__init__``
    (a plain class deriving from `cls`) is built by attrs' original ``__init__``.
    """
    if not attrs.has(cast("type", cls)) or "__slots__" not in cls.__dict__:
        raise TypeError(f"fast_init needs a slotted attrs class, not {cls.__qualname__}")
    for hook in _HOOKS:
        if hasattr(cls, hook):
            raise TypeError(f"fast_init: {cls.__qualname__} defines {hook}")
    builder = type(
        f"{cls.__name__}Builder",
        (cls,),
        {
            "__slots__": (),
            # Both, since one C slot serves assignment and deletion: a class that overrides
            # either one sends every store through a Python-level lookup.
            "__setattr__": object.__setattr__,
            "__delattr__": object.__delattr__,
            "__module__": cls.__module__,
        },
    )
    namespace: dict[str, Any] = {
        "_cls": cls,
        "_builder": builder,
        "_attrs_init": cls.__init__,
        # The descriptor's own setter: the frozen class's __setattr__ would refuse, and
        # object.__setattr__ would look the descriptor up again on every call.
        "_set_class": object.__dict__["__class__"].__set__,
        "_NO_VALUE": _NO_VALUE,
    }
    positional: list[str] = []
    keyword: list[str] = []
    defaults: list[str] = []
    stores: list[str] = []
    call: list[str] = []
    for f in attrs.fields(cast("type[attrs.AttrsInstance]", cls)):
        if f.validator is not None or f.converter is not None or not f.init:
            raise TypeError(
                f"fast_init: {cls.__qualname__}.{f.name} has a validator, a converter or "
                "init=False; only plain fields are supported"
            )
        arg = f.alias
        if f.default is attrs.NOTHING:
            param = arg
        elif isinstance(f.default, attrs.Factory):  # type: ignore[arg-type]
            if f.default.takes_self:
                raise TypeError(f"fast_init: {cls.__qualname__}.{f.name} takes self")
            namespace[f"_factory_{f.name}"] = f.default.factory
            param = f"{arg}=_NO_VALUE"
            defaults.append(f"    if {arg} is _NO_VALUE:\n        {arg} = _factory_{f.name}()\n")
        else:
            namespace[f"_default_{f.name}"] = f.default
            param = f"{arg}=_default_{f.name}"
        (keyword if f.kw_only else positional).append(param)
        stores.append(f"    self.{f.name} = {arg}\n")
        call.append(f"{arg}={arg}")
    params = ["self", *positional, *(["*", *keyword] if keyword else [])]
    source = (
        f"def __init__({', '.join(params)}):\n"
        + "".join(defaults)
        + "    if self.__class__ is not _cls:\n"
        + f"        return _attrs_init(self, {', '.join(call)})\n"
        + "    _set_class(self, _builder)\n"
        + "".join(stores)
        + "    self.__class__ = _cls\n"
    )
    exec(compile(source, f"<fast_init {cls.__qualname__}>", "exec"), namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    setattr(cls, "__init__", init)  # noqa: B010 (mypy forbids assigning a method)
    return cls


__all__ = ["fast_init"]
