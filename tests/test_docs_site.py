"""The documentation site (mkdocs.yml, docs/): an API reference page for every audience module,
and a strict build that renders every public name.

The README's test command builds the site with `mkdocs build --strict` too, which fails on a
broken link or anchor and on a page left out of the nav; what a strict build does not see is a
public name the reference leaves out (a name re-exported from another package, say), which the
last test here checks on the built pages.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_architecture import AUDIENCE_MODULES

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "api"


def _nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav names (`- Title: page.md` lines), in order."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text[text.index("\nnav:\n") :]
    return re.findall(r"^\s+- [^:\n]+: (\S+\.md)$", nav, flags=re.MULTILINE)


@pytest.mark.parametrize("module", AUDIENCE_MODULES)
def test_each_audience_module_has_a_reference_page_in_the_nav(module: str) -> None:
    """docs/api/MODULE.md renders the module from its docstrings, and the nav lists it."""
    page = API / f"{module}.md"
    assert page.is_file(), f"{page.relative_to(ROOT)} is missing: `::: {module}` renders it"
    assert re.search(rf"^::: {re.escape(module)}$", page.read_text(encoding="utf-8"), re.M)
    assert f"api/{module}.md" in _nav_pages()


def test_every_page_under_docs_is_in_the_nav() -> None:
    """A page the nav leaves out is hard to find; the strict build refuses it too."""
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert pages == set(_nav_pages())


def test_the_site_builds_strictly_and_renders_every_public_name(tmp_path: Path) -> None:
    """`mkdocs build --strict` passes (a stray page, a broken link or anchor would fail it), and
    each name of each audience module's `__all__` has its entry (an anchor `module.Name`) on the
    module's reference page."""
    pytest.importorskip("mkdocs", reason="the `docs` extra is not installed")
    site = tmp_path / "site"
    env = {k: v for k, v in os.environ.items() if not k.startswith("COV_CORE_")}
    env["NO_MKDOCS_2_WARNING"] = "1"  # mkdocs-material's notice about its successor
    done = subprocess.run(
        # Not `-q`, which mkdocs 1.6 lets pass a strict build with warnings.
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    for module in AUDIENCE_MODULES:
        page = (site / "api" / module / "index.html").read_text(encoding="utf-8")
        anchors = set(re.findall(rf'id="{re.escape(module)}\.(\w+)"', page))
        missing = [n for n in importlib.import_module(module).__all__ if n not in anchors]
        assert not missing, f"the reference page of {module} leaves out {missing}"


def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub and MkDocs make it from plain words and code."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", ["README.md", "CONTRIBUTING.md"])
def test_links_outside_the_site_resolve(doc: str) -> None:
    """The README and CONTRIBUTING.md are not pages of the site, so the strict build does not
    see their links: each relative link names a file of the checkout, and its anchor a heading."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    broken = []
    for link in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = ROOT / path
        if not target.exists():
            broken.append(link)
        elif anchor:
            headings = re.findall(r"^#+ (.*)$", target.read_text(encoding="utf-8"), re.M)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(link)
    assert not broken, f"{doc}: {broken}"


REPO_PATH = re.compile(
    r"`((?:harness|checks|termination|strategies|tests|bench|fixtures)/[\w./-]*\w)`"
    r"|`((?:harness|checks|termination|strategies)(?:\.\w+)*\._\w+)"
)


def test_the_files_and_modules_the_docs_name_exist() -> None:
    """A path (`harness/_loop/_session.py`) or a private module (`strategies._cli._progress`)
    named in the README, CONTRIBUTING.md or a page of docs/ exists, so moving code cannot leave
    the docs pointing at nothing. A path that captions an example (`tests/test_agent.py`: and
    the block) is the reader's file, not ours."""
    docs = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
    gone = []
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        for found in REPO_PATH.finditer(text):
            path, module = found.groups()
            if text.startswith(":\n", found.end()):
                continue
            if path:
                exists = (ROOT / path).exists()
            else:
                where = ROOT / Path(*module.split("."))
                exists = where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()
            if not exists:
                gone.append(f"{doc.relative_to(ROOT)}: {path or module}")
    assert not gone, gone
