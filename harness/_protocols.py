"""`implements`: ``isinstance(obj, SomeProtocol)`` for a runtime-checkable protocol, at the cost
of a few attribute reads.

On Python 3.11 every such ``isinstance`` recomputes the protocol's member list by walking its
classes (15-50 µs a question), and building a `Harness` or a policy asks a dozen of them:
that was most of what a test replaying a fixture spent outside pytest. The member list is
computed here once per protocol; the answer is still read from the object each time, so an
attribute set on an instance counts as it does for ``isinstance``.
"""

from __future__ import annotations

import inspect
from typing import TypeGuard, TypeVar

T = TypeVar("T")

# What typing leaves out of a protocol's members (Python 3.11's `typing._get_protocol_attrs`).
_NOT_MEMBERS = frozenset(
    {
        "__abstractmethods__",
        "__annotations__",
        "__weakref__",
        "_is_protocol",
        "_is_runtime_protocol",
        "__dict__",
        "__args__",
        "__slots__",
        "__next_in_mro__",
        "__parameters__",
        "__origin__",
        "__orig_bases__",
        "__extra__",
        "__tree_hash__",
        "__doc__",
        "__subclasshook__",
        "__init__",
        "__new__",
        "__module__",
        "_MutableMapping__marker",
        "_gorg",
        "__protocol_attrs__",
        "__non_callable_proto_members__",
        "__type_params__",
        "__static_attributes__",
        "__firstlineno__",
    }
)

_MEMBERS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _members(protocol: type) -> tuple[tuple[str, bool], ...]:
    """Each member's name, and whether the protocol declares it as a method (which an
    object may not set to None)."""
    if not getattr(protocol, "_is_runtime_protocol", False):
        raise TypeError(f"{protocol!r} is not a runtime-checkable protocol")
    names: set[str] = set()
    for base in protocol.__mro__[:-1]:  # without `object`
        if base.__name__ in ("Protocol", "Generic"):
            continue
        for name in [*base.__dict__, *inspect.get_annotations(base)]:
            if not name.startswith("_abc_") and name not in _NOT_MEMBERS:
                names.add(name)
    return tuple(sorted((name, callable(getattr(protocol, name, None))) for name in names))


def implements(obj: object, protocol: type[T]) -> TypeGuard[T]:
    """``isinstance(obj, protocol)`` for a ``@runtime_checkable`` protocol: `obj` has every
    member, and no method of the protocol is None on it."""
    members = _MEMBERS.get(protocol)
    if members is None:
        members = _MEMBERS[protocol] = _members(protocol)
    for name, method in members:
        try:
            value = getattr(obj, name)
        except AttributeError:
            return False
        if method and value is None:
            return False
    return True
