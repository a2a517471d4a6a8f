"""Markdown for `Schema` and `Variants`: the sections of docs/spec-reference.md.

Each table becomes a heading with an anchor, its help paragraph and one row per key (name,
kind, default, what it does, its allowed values and the table it follows).
"""

from __future__ import annotations

import json
import re

from ._schema import REQUIRED, Key, Schema, Variants


def anchor(target: Schema | Variants) -> str:
    """The id a section's heading carries, for links from keys that follow its schema."""
    text = target.name if isinstance(target, Variants) else target.heading or target.title
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def render_schema(schema: Schema, *, level: int = 2) -> str:
    """One table's section: heading, help and the table of its keys."""
    lines = [f'<a id="{anchor(schema)}"></a>', ""]
    lines.append(f"{'#' * level} {schema.heading or schema.title}")
    lines.append("")
    if schema.help:
        lines += [schema.help, ""]
    lines += render_keys(schema)
    return "\n".join(lines)


def render_variants(variants: Variants, *, level: int = 2, title: str | None = None) -> str:
    """A family of tables: its heading and help, then one section per type."""
    lines = [f'<a id="{anchor(variants)}"></a>', "", f"{'#' * level} {title or variants.name}", ""]
    if variants.help:
        lines += [variants.help, ""]
    kinds = ", ".join(f"[`{kind}`](#{anchor(variants)}-{kind})" for kind in variants.schemas)
    default = f" (default `{variants.default}`)" if variants.default is not None else ""
    lines += [f"`{variants.discriminator}` is one of {kinds}{default}.", ""]
    for kind, schema in variants.schemas.items():
        lines.append(f'<a id="{anchor(variants)}-{kind}"></a>')
        lines.append("")
        lines.append(f'{"#" * (level + 1)} {variants.discriminator} = "{kind}"')
        lines.append("")
        if schema.help:
            lines += [schema.help, ""]
        lines += render_keys(schema)
    return "\n".join(lines).rstrip() + "\n"


def render_keys(schema: Schema) -> list[str]:
    """The key table of `schema` (a sentence when it takes no keys)."""
    if not schema.keys:
        return ["No other keys.", ""] if not schema.open else ["Any keys its factory takes.", ""]
    rows = ["| key | type | default | description |", "| --- | --- | --- | --- |"]
    rows += [_row(key) for key in schema.keys]
    rows.append("")
    return rows


def _row(key: Key) -> str:
    text = key.help
    if key.choices:
        text += " One of " + ", ".join(f"`{_toml(c)}`" for c in key.choices) + "."
    linked = key.linked
    if linked is not None:
        label = linked.name if isinstance(linked, Variants) else linked.heading
        text += f" See [{label}](#{anchor(linked)})."
    kinds = " or ".join(key.kind)
    return f"| `{key.name}` | {kinds} | {_default(key)} | {_cell(text)} |"


def _default(key: Key) -> str:
    if key.default is REQUIRED:
        return "**required**"
    if key.default_text is not None:
        return _cell(key.default_text)
    if key.default is None:
        return "—"
    return f"`{_toml(key.default)}`"


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
