"""Building HTML in which every piece of text is escaped unless it is already markup.

Everything the transcript holds (model text, tool arguments and output, check reasons) is
hostile: it reaches the page only through `tag` as a plain `str`, which is escaped. Only
`Html` values, which `tag` itself returns, go in as they are.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from functools import lru_cache


class Html(str):
    """Markup that is already safe to insert."""

    __slots__ = ()


Child = str | int | float | Html | None | Iterable["Child"]
AttrValue = str | int | float | bool | None


def escape(text: str) -> Html:
    return Html(_escape(text))


def _escape(text: str) -> str:
    # Short texts (attribute values, labels, names) repeat a lot: their escapes are cached.
    return _escape_short(text) if len(text) <= 80 else html.escape(text, quote=True)


@lru_cache(maxsize=8192)
def _escape_short(text: str) -> str:
    return html.escape(text, quote=True)


def tag(name: str, attrs: Mapping[str, AttrValue] | None = None, *children: Child) -> Html:
    """``<name attrs>children</name>``: attribute values and `str` children are escaped."""
    start = void(name, attrs) if attrs else f"<{name}>"
    return Html(f"{start}{join(children)}</{name}>")


def void(name: str, attrs: Mapping[str, AttrValue] | None = None) -> Html:
    """``<name attrs>``, an element without content (``meta``, ``input``)."""
    parts = [f"<{name}"]
    for key, value in (attrs or {}).items():
        if value is None or value is False:
            continue
        if value is True:
            parts.append(f" {key}")
        elif type(value) is int:
            parts.append(f' {key}="{value}"')
        else:
            parts.append(f' {key}="{_escape(str(value))}"')
    parts.append(">")
    return Html("".join(parts))


def join(children: Iterable[Child]) -> Html:
    """The children as markup: `Html` as it is, text escaped, lists flattened, None dropped."""
    out: list[str] = []
    for child in children:
        if child is None:
            continue
        if isinstance(child, Html):
            out.append(child)
        elif isinstance(child, str):
            out.append(_escape(child))
        elif isinstance(child, int | float):
            out.append(_escape(str(child)))
        else:
            out.append(join(child))
    return Html("".join(out))


def tokens(count: int) -> str:
    return f"{count:,}"


def cost(value: float | None) -> str:
    if value is None:
        return "unknown"
    if value == 0 or value >= 0.01:
        return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"
    return f"${value:.6f}".rstrip("0")


def seconds(value: float) -> str:
    if value < 60:
        return f"{value:.2f}s" if value < 10 else f"{value:.1f}s"
    minutes, rest = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes}m {rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {rest:02d}s"
