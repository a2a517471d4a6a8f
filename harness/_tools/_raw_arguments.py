"""Tool-call arguments a model sent as JSON text (OpenAI-compatible servers do).

`read_arguments` reads them as leniently as JSON allows without guessing: control characters
inside strings (a raw newline in a file's content, which small models often write) are taken
as they are (``json.loads(text, strict=False)``). Text that is still not a JSON object is not
repaired; it reaches the session as ``{"_invalid_json": <the raw text>}``, and the call is
refused with the parser's own reason and position (`refusal`), so the model can fix it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

INVALID_ARGUMENTS = "_invalid_json"
_SHOWN = 200  # characters of the raw text a refusal quotes


def read_arguments(raw: object) -> dict[str, Any]:
    """The arguments `raw` holds: an object as it is, empty text as none, JSON text parsed,
    anything else kept under `INVALID_ARGUMENTS` (as text) for the refusal."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            parsed = _parse(raw)
        except ValueError:
            return {INVALID_ARGUMENTS: raw}
        return parsed if isinstance(parsed, dict) else {INVALID_ARGUMENTS: raw}
    return {INVALID_ARGUMENTS: json.dumps(raw)}


def refusal(arguments: Mapping[str, Any]) -> str | None:
    """The error a call with unreadable `arguments` gets (None: they were read): why the text
    is not a JSON object, in the parser's words, and its start."""
    if INVALID_ARGUMENTS not in arguments:
        return None
    raw = arguments[INVALID_ARGUMENTS]
    text = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        parsed = _parse(text)
    except json.JSONDecodeError as exc:
        why = f"{exc.msg} at line {exc.lineno} column {exc.colno} (character {exc.pos})"
    except ValueError as exc:
        why = str(exc)
    else:
        why = f"they are {_kind(parsed)}, not an object of named arguments"
    shown = text if len(text) <= _SHOWN else f"{text[:_SHOWN]}… ({len(text) - _SHOWN} more)"
    return f"error: the tool call's arguments are not a JSON object ({why}); they were: {shown!r}"


def _parse(text: str) -> Any:
    """JSON text, control characters inside strings allowed. Raises `ValueError` (a
    `json.JSONDecodeError`) or `RecursionError` (nested too deeply)."""
    try:
        return json.loads(text, strict=False)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _kind(value: object) -> str:
    """The JSON name of `value`'s kind."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a string" if isinstance(value, str) else "an array"
