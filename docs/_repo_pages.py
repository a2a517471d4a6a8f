"""A MkDocs hook: the pages that are links to files elsewhere in the checkout
(docs/readme.md is ../README.md) keep their relative links on the site.

Such a file's links are written from where it lives (the README's `docs/loop.md`), which
a forge follows; on the site the page sits in docs/, so each link to a file the site
shows as a page is rewritten to that page. A link to anything else is left alone, and the
strict build refuses it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
EXTERNAL = re.compile(r"[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def on_page_markdown(markdown: str, *, page: Any, config: Any, files: Any) -> str:
    """The page's Markdown, its links made relative to docs/ when the page is a link."""
    source = Path(page.file.abs_src_path)
    if not source.is_symlink():
        return markdown
    home = source.resolve().parent
    pages = {Path(f.abs_src_path).resolve(): f.src_uri for f in files.documentation_pages()}
    here = posixpath.dirname(page.file.src_uri) or "."

    def rewrite(found: re.Match[str]) -> str:
        target = found["target"]
        if EXTERNAL.match(target) or target.startswith(("#", "/")):
            return found[0]
        path, hash_, anchor = target.partition("#")
        uri = pages.get((home / path).resolve())
        if uri is None:
            return found[0]
        return f"]({posixpath.relpath(uri, here)}{hash_}{anchor})"

    return LINK.sub(rewrite, markdown)
