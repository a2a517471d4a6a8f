"""Reading a JUnit XML report, which the agent can write: never a DTD.

A report is the agent's file, so it is parsed as hostile input. A JUnit report never needs a
document type declaration, and one is the only door to XML's entity tricks (a "billion
laughs" expansion, external entities), so a report that declares one is refused, not read.
With `defusedxml` installed (the ``xml`` extra) it does the refusing, with its guards against
the rest; without it, the prolog is read here first and the standard parser (whose expat
resolves no external entity) reads the rest. Either way the answer is the same.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

# What may come before the root element: the XML declaration, comments, processing
# instructions and white space; a DTD would be the next thing.
_PROLOG = re.compile(rb"\A(?:\s+|<\?.*?\?>|<!--.*?-->)*", re.DOTALL)


class JunitError(ValueError):
    """The JUnit XML report cannot be read."""


class _Refused(Exception):
    """The report declares a DTD."""


def parse_report(path: Path, *, label: str) -> ET.Element:
    """The root element of the report at `path`; `JunitError` naming `label` otherwise."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise JunitError(f"{label} was not written") from None
    except OSError as exc:
        raise JunitError(f"{label} cannot be read: {exc.strerror}") from None
    try:
        return _parse(data)
    except ET.ParseError as exc:
        line, column = exc.position
        raise JunitError(f"{label} is not valid XML (line {line}, column {column})") from None
    except _Refused:
        raise JunitError(
            f"{label} declares a DTD (<!DOCTYPE>), which a JUnit report never needs, so it "
            "is not read (a DTD is how XML's entity tricks get in)"
        ) from None


def _parse(data: bytes) -> ET.Element:
    try:
        from defusedxml import DefusedXmlException
        from defusedxml.ElementTree import fromstring
    except ImportError:
        prolog = _PROLOG.match(data)
        if data[prolog.end() if prolog else 0 :].startswith(b"<!DOCTYPE"):
            raise _Refused from None
        return ET.fromstring(data)
    try:
        root: ET.Element = fromstring(data, forbid_dtd=True)
    except DefusedXmlException:
        raise _Refused from None
    return root
