"""What validating a tool call's arguments costs, per call.

    python bench/validation.py            # the compiled validator on three tools
    python bench/validation.py --compare  # also jsonschema and pydantic, where installed

Rows: `add(a: int, b: int)` (the bench's inline tool), a tool taking an Enum, a Path and a
tuple (validation plus conversion), and one taking a list of ten TypedDict rows. Each figure
is the median over repeats of the mean over many calls, in microseconds. `--compare` runs the
same checks with `jsonschema` (a validator built once, `Draft202012Validator(schema)`, so only
the call is timed) and with a pydantic model built once from the signature (`validate_call`),
and the import time of each: neither is a dependency, so those rows appear only when the
library is importable.
"""

from __future__ import annotations

import argparse
import enum
import importlib
import statistics
import sys
import time
import timeit
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import Tool


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


def paint(color: Color, where: Path, size: tuple[int, int]) -> str:
    """Paint."""
    return f"{color} {where} {size}"


class Row(TypedDict):
    name: str
    qty: int
    price: float


def order(rows: list[Row], note: str = "") -> int:
    """Order."""
    return len(rows)


CASES: list[tuple[str, Callable[..., Any], Mapping[str, Any]]] = [
    ("add(a: int, b: int)", add, {"a": 1, "b": 2}),
    (
        "paint(Color, Path, tuple[int, int])",
        paint,
        {"color": "red", "where": "a/b", "size": [2, 3]},
    ),
    (
        "order(list[Row] x10, TypedDict of 3)",
        order,
        {"rows": [{"name": f"n{i}", "qty": i, "price": 1.5} for i in range(10)]},
    ),
]


def per_call_us(fn: Callable[[], object], repeats: int) -> float:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return statistics.median(t / number * 1e6 for t in timer.repeat(repeats, number))


def import_ms(module: str) -> float:
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        del sys.modules[name]
    start = time.perf_counter()
    importlib.import_module(module)
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", action="store_true", help="also jsonschema and pydantic")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"{'tool':40} {'validate':>10} {'+convert':>10}   µs per call")
    for label, fn, arguments in CASES:
        tool = Tool.from_function(fn)
        check = per_call_us(lambda: tool.validate(arguments), args.repeats)  # noqa: B023
        parse = per_call_us(lambda: tool.parse_arguments(arguments), args.repeats)  # noqa: B023
        print(f"{label:40} {check:10.2f} {parse:10.2f}")
    if args.compare:
        compare(args.repeats)


def compare(repeats: int) -> None:
    for name, build in (("jsonschema", _jsonschema), ("pydantic", _pydantic)):
        print()
        try:
            loaded = import_ms(name)
        except ImportError:
            print(f"{name}: not installed, skipped")
            continue
        print(f"{name} {metadata.version(name)}: import {loaded:.0f} ms (cold, this process)")
        for label, fn, arguments in CASES:
            try:
                call = build(fn, arguments)
            except Exception as exc:
                print(f"  {label:38} refused: {str(exc).splitlines()[0]}")
                continue
            print(f"  {label:38} {per_call_us(call, repeats):10.2f}")


def _jsonschema(fn: Callable[..., Any], arguments: Mapping[str, Any]) -> Callable[[], object]:
    """Validation only, with a validator built once from the derived schema."""
    jsonschema: Any = importlib.import_module("jsonschema")
    validator = jsonschema.Draft202012Validator(Tool.from_function(fn).parameters)
    return lambda: validator.validate(arguments)


def _pydantic(fn: Callable[..., Any], arguments: Mapping[str, Any]) -> Callable[[], object]:
    """Validation, conversion and the call itself (`validate_call` offers no less)."""
    pydantic: Any = importlib.import_module("pydantic")
    call = pydantic.validate_call(fn)
    return lambda: call(**arguments)


if __name__ == "__main__":
    main()
