"""Tool arguments may be pydantic models and the types pydantic reads from JSON text
(`datetime`, `date`, `UUID`, `Decimal`, ...): the schema and the conversion come from
pydantic's `TypeAdapter`, references inlined so the schema stands alone."""

from __future__ import annotations

import datetime
import decimal
import json
import re
import sys
import uuid
from typing import Any

import pytest
from _tools_support import tool_results
from pydantic import BaseModel

from harness import ConfigurationError, Tool


class LineItem(BaseModel):
    """A line of an order."""

    name: str
    qty: int = 1
    delivered: datetime.datetime | None = None


class Order(BaseModel):
    items: list[LineItem]
    note: str = ""


class Node(BaseModel):
    children: list[Node] = []


def place(order: Order, due: datetime.date, ref: uuid.UUID, total: decimal.Decimal) -> Order:
    """Place an order.

    Args:
        order: What to send.
        due: The day it is due.
    """
    return order


def test_a_model_argument_has_a_standalone_schema() -> None:
    """The model's schema is inlined (no `$ref` the tool's root could not resolve), and the
    standard types are strings with pydantic's formats."""
    schema = Tool.from_function(place).parameters
    assert "$ref" not in json.dumps(schema)
    assert "$defs" not in json.dumps(schema)
    order = schema["properties"]["order"]
    assert order["type"] == "object"
    assert order["required"] == ["items"]
    assert order["description"] == "What to send."
    item = order["properties"]["items"]["items"]
    assert item["required"] == ["name"]
    assert item["properties"]["qty"] == {"default": 1, "title": "Qty", "type": "integer"}
    assert schema["properties"]["due"] == {
        "format": "date",
        "type": "string",
        "description": "The day it is due.",
    }
    assert schema["properties"]["ref"]["format"] == "uuid"
    assert schema["required"] == ["order", "due", "ref", "total"]


def test_arguments_become_the_types_the_function_declares() -> None:
    arguments = {
        "order": {"items": [{"name": "a", "delivered": "2025-01-02T03:04:05Z"}]},
        "due": "2025-02-01",
        "ref": "12345678-1234-5678-1234-567812345678",
        "total": "9.50",
    }
    parsed: dict[str, Any] = dict(Tool.from_function(place).parse_arguments(arguments))
    assert parsed["order"] == Order(
        items=[
            LineItem(
                name="a", delivered=datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
            )
        ]
    )
    assert parsed["due"] == datetime.date(2025, 2, 1)
    assert parsed["ref"] == uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert parsed["total"] == decimal.Decimal("9.50")


def test_a_recursive_model_is_refused_when_the_tool_is_made() -> None:
    def grow(tree: Node) -> None:
        """Grow."""

    with pytest.raises(ConfigurationError, match=re.escape("has a recursive type (Node)")):
        Tool.from_function(grow)


@pytest.mark.anyio
async def test_through_the_loop_a_bad_value_is_an_error_the_model_sees() -> None:
    """A value the schema admits but pydantic refuses (a date that is not one) is an error
    result naming the argument and the field; a good call returns the model as JSON."""

    def deliver(order: Order, on: datetime.date) -> dict[str, Any]:
        """Deliver."""
        return {"order": order, "on": on}

    good = {"order": {"items": [{"name": "a", "qty": 2}]}, "on": "2025-03-04"}
    bad_date = {"order": {"items": []}, "on": "soon"}
    bad_item = {"order": {"items": [{"name": "a", "delivered": "yesterday"}]}, "on": "2025-03-04"}
    results = await tool_results(
        [("deliver", good), ("deliver", bad_date), ("deliver", bad_item)], [deliver]
    )
    assert json.loads(results[0][0]) == {
        "order": {"items": [{"name": "a", "qty": 2, "delivered": None}], "note": ""},
        "on": "2025-03-04",
    }
    assert results[0][1] is False
    assert results[1][1] is True
    assert results[1][0].startswith(
        "error: ToolArgumentError: argument 'on' is not a valid date: Input should be a valid date"
    )
    assert results[2][0].startswith(
        "error: ToolArgumentError: argument 'order' is not a valid Order: "
        "items.0.delivered: Input should be a valid datetime"
    )


def test_without_pydantic_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where pydantic is not installed, a `datetime` parameter says what to install."""
    monkeypatch.setitem(sys.modules, "pydantic", None)  # `import pydantic` now fails

    def remind(at: datetime.datetime) -> None:
        """Remind."""

    message = (
        "tool 'remind': parameter 'at' has the type datetime, which needs pydantic: "
        "pip install 'completion-harness[pydantic]'"
    )
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        Tool.from_function(remind)
