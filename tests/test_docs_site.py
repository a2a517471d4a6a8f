"""The documentation site (mkdocs.yml, docs/): an API reference page for every audience module,
and a strict build that renders every public name.

The README's test command builds the site with `mkdocs build --strict` too, which fails on a
broken link or anchor and on a page left out of the nav; what a strict build does not see is a
public name the reference leaves out (a name re-exported from another package, say), which the
last test here checks on the built pages.
"""

from __future__ import annotations

import html
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


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for the tests that read it (`mkdocs build --strict`)."""
    pytest.importorskip("mkdocs", reason="the `docs` extra is not installed")
    site = tmp_path_factory.mktemp("docs") / "site"
    env = {k: v for k, v in os.environ.items() if not k.startswith("COV_CORE_")}
    env["NO_MKDOCS_2_WARNING"] = "1"  # mkdocs-material's notice about its successor
    done = subprocess.run(
        # Not `-q`, which mkdocs 1.6 lets pass a strict build with warnings.
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    return site


def test_the_site_builds_strictly_and_renders_every_public_name(site: Path) -> None:
    """`mkdocs build --strict` passes (a stray page, a broken link or anchor would fail it), and
    each name of each audience module's `__all__` has its entry (an anchor `module.Name`) on the
    module's reference page."""
    for module in AUDIENCE_MODULES:
        page = (site / "api" / module / "index.html").read_text(encoding="utf-8")
        anchors = set(re.findall(rf'id="{re.escape(module)}\.(\w+)"', page))
        missing = [n for n in importlib.import_module(module).__all__ if n not in anchors]
        assert not missing, f"the reference page of {module} leaves out {missing}"


def _text(page: Path) -> str:
    """What a reader sees of a built page's article (not its navigation): its text, without
    tags, scripts or styles."""
    markup = page.read_text(encoding="utf-8")
    markup = markup[markup.index("<article") : markup.index("</article>")]
    markup = re.sub(r"<(script|style)[^>]*>.*?</\1>", "", markup, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def test_the_harness_page_opens_with_the_facade_and_its_signature(site: Path) -> None:
    """The `harness` page shows `Harness(` with its parameters (attrs writes the constructor;
    the reference shows it) before any constant, and a default made by a factory reads as a
    call, never as ``Factory(lambda ...)``."""
    text = _text(site / "api" / "harness" / "index.html")
    start = text.index("Harness(")
    signature = text[start : text.index(")", text.index("mcp_servers", start))]
    for parameter in (
        "model: ModelClient",
        "policy: Policy",
        "strategy: Strategy = SingleSession()",
    ):
        assert parameter in signature
    assert start < text.index("DEFAULT_SYSTEM_PROMPT")
    for module in AUDIENCE_MODULES:
        assert "Factory(" not in _text(site / "api" / module / "index.html"), module


SIGNATURES = {
    "termination": r"Budget\(\s*\*,\s*max_turns: int \| None = None,",
    "strategies": r"Ralph\(\s*\*,\s*max_iterations: int = 5,.*BestOf\(\s*\*,\s*n: int = 4,",
    "checks": r"TestSuiteCheck\(\s*command: str \| tuple\[str, \.\.\.\],\s*working_dir: str = ",
}


@pytest.mark.parametrize("module", sorted(SIGNATURES))
def test_the_reference_shows_the_signatures_of_the_attrs_classes(site: Path, module: str) -> None:
    """`Budget`, `BestOf`, `Ralph` and `TestSuiteCheck` show their constructors' parameters,
    with their annotations and defaults."""
    text = _text(site / "api" / module / "index.html")
    assert re.search(SIGNATURES[module], text, re.S), module


PRIVATE = re.compile(r"\b(?:harness|checks|termination|strategies)(?:\.\w+)*\._[a-z]\w*")


def test_the_reference_names_no_private_module(site: Path) -> None:
    """A reader of the reference is never sent to a private module (`harness._log`): the text
    of every API page names none."""
    for module in AUDIENCE_MODULES:
        named = sorted(set(PRIVATE.findall(_text(site / "api" / module / "index.html"))))
        assert not named, (module, named)


def test_the_front_door_pages_and_the_repository(site: Path) -> None:
    """Install and Quickstart are pages of the site, in the nav before the guide, and every
    page links the repository."""
    pages = _nav_pages()
    assert pages[:3] == ["index.md", "install.md", "quickstart.md"]
    text = (site / "index.html").read_text(encoding="utf-8")
    assert 'class="md-source"' in text
    assert "Quickstart" in _text(site / "quickstart" / "index.html")


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
