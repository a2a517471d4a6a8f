"""Every fenced snippet in the README, CONTRIBUTING.md and docs/ (the pages of the docs site,
at any depth) runs when pasted, so the docs cannot drift.

```python blocks run with this interpreter (the project's venv), ```bash blocks with bash, each
document's blocks in order in one fresh folder that holds a copy of `fixtures/` (as a clone's
root does), with the venv's `harness` first on PATH and TMPDIR inside that folder. A block
marked right above its fence

    <!-- snippet: no-run (needs an API key) -->

is not run (the reason is required, and such blocks are kept few); one marked
``<!-- snippet: exit 1 -->`` must exit with that code. Blocks of other languages (``text``
for a usage synopsis, ``toml``, ``json``, ``yaml``, or none for sample output) are not run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from attrs import frozen

ROOT = Path(__file__).resolve().parent.parent
DOCS = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    # docs/fixture-format.md is a link to fixtures/README.md: run it once, by its own name
    *sorted(p for p in (ROOT / "docs").rglob("*.md") if not p.is_symlink()),
    ROOT / "fixtures" / "README.md",
]
RUN = {"python": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
MARKER = re.compile(r"<!-- snippet: (?:no-run \((?P<reason>[^)]+)\)|exit (?P<code>\d+)) -->")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
MOST_NOT_RUN = 7


@frozen
class Snippet:
    doc: Path
    line: int  # of the opening fence, from 1
    lang: str
    code: str
    skip: str | None  # why it is not run
    exit_code: int

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def snippets(doc: Path) -> list[Snippet]:
    """The fenced blocks of `doc`, each with the marker on the line above its fence."""
    found: list[Snippet] = []
    lines = doc.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        above = lines[index - 1] if index else ""
        marker = MARKER.search(above)
        if "snippet:" in above and marker is None:
            raise AssertionError(f"{doc}:{index}: a snippet marker that cannot be read: {above}")
        found.append(
            Snippet(
                doc,
                index + 1,
                opening["lang"],
                "\n".join(lines[index + 1 : end]) + "\n",
                marker["reason"] if marker else None,
                int(marker["code"]) if marker and marker["code"] else 0,
            )
        )
        index = end + 1
    return found


def _environment(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PYTEST"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["TMPDIR"] = str(folder / "tmp")
    # A snippet that installs a hook or keeps a cache writes into a HOME of its own, never the
    # user's (an install with --scope user once left entries in the real ~/.cursor).
    home = folder / "home"
    home.mkdir(exist_ok=True)
    env["HOME"] = str(home)
    for variable in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "CODEX_HOME"):
        env.pop(variable, None)
    env["NO_COLOR"] = "1"
    env.pop("COV_CORE_SOURCE", None)  # pytest-cov's subprocess hook
    return env


def run(snippet: Snippet, folder: Path) -> subprocess.CompletedProcess[str]:
    language = RUN[snippet.lang]
    if language == "python":
        script = folder / "snippet.py"
        script.write_text(snippet.code, encoding="utf-8")
        # A deprecated name in the docs is an error: the docs show the current homes.
        argv = [sys.executable, "-W", "error::DeprecationWarning", str(script)]
    else:
        argv = ["bash", "-c", snippet.code]
    return subprocess.run(
        argv,
        cwd=folder,
        env=_environment(folder),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: str(doc.relative_to(ROOT)))
def test_every_snippet_runs_when_pasted(doc: Path, tmp_path: Path) -> None:
    """Each runnable block of the document, in order, in a folder laid out like a clone."""
    folder = tmp_path / "clone"
    shutil.copytree(ROOT / "fixtures", folder / "fixtures", ignore=shutil.ignore_patterns(".board"))
    (folder / "tmp").mkdir()
    for snippet in snippets(doc):
        if snippet.lang not in RUN or snippet.skip is not None:
            continue
        done = run(snippet, folder)
        assert done.returncode == snippet.exit_code, (
            f"{snippet.where}: the {snippet.lang} snippet exited {done.returncode}, "
            f"expected {snippet.exit_code}\n--- stdout\n{done.stdout[-3000:]}"
            f"\n--- stderr\n{done.stderr[-3000:]}"
        )


def test_blocks_that_do_not_run_are_few_and_say_why() -> None:
    """A block left out must carry its reason, and there are at most a handful."""
    skipped = [s for doc in DOCS for s in snippets(doc) if s.skip is not None]
    assert all(s.lang in RUN for s in skipped), [s.where for s in skipped if s.lang not in RUN]
    assert len(skipped) <= MOST_NOT_RUN, [f"{s.where}: {s.skip}" for s in skipped]


def test_synopses_are_text_not_commands() -> None:
    """A usage synopsis (``[--flag VALUE]`` placeholders) is fenced as ``text``: a shell block
    is a command to paste."""
    for doc in DOCS:
        for snippet in snippets(doc):
            if RUN.get(snippet.lang) == "bash":
                assert not re.search(r" \[-", snippet.code), (
                    f"{snippet.where} looks like a synopsis"
                )


def test_the_reader_finds_markers_and_exit_codes(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "<!-- snippet: no-run (needs a key) -->\n```python\nx = 1\n```\n\n"
        "<!-- snippet: exit 1 -->\n```bash\nfalse\n```\n```\nout\n```\n"
    )
    found = snippets(doc)
    assert [(s.lang, s.line, s.skip, s.exit_code) for s in found] == [
        ("python", 2, "needs a key", 0),
        ("bash", 7, None, 1),
        ("", 10, None, 0),
    ]


def _readme_test_command() -> Snippet:
    return next(
        s
        for s in snippets(ROOT / "README.md")
        if s.lang == "bash" and "ruff format --check" in s.code
    )


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    """`.ci/run` ends with the README's test command, word for word: the `ray` and `docs`
    extras, which `dev` leaves out, the pinned coding agents installed before pytest runs, and
    the docs site built strictly."""
    command = _readme_test_command().code.strip()
    assert "'.[dev,ray,docs]'" in command
    steps = command.split(" && ")
    npm = "npm ci --prefix tests/agents --no-audit --no-fund"
    assert npm in steps
    assert steps.index(npm) < steps.index(".venv/bin/pytest")
    # Not `-q`: mkdocs 1.6 counts the warnings that fail a strict build only when it logs them.
    assert ".venv/bin/mkdocs build --strict" in steps
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert lines[-1] == command


def _where_npm_looks(folder: str, name: str) -> Iterator[str]:
    """The lockfile keys npm tries for `name` required from the package at `folder`: its own
    node_modules, then each node_modules folder above it."""
    while True:
        yield f"{folder}/node_modules/{name}" if folder else f"node_modules/{name}"
        if not folder:
            return
        cut = folder.rfind("/node_modules/")
        folder = folder[:cut] if cut >= 0 else ""


def test_npm_ci_accepts_the_coding_agents_lockfile() -> None:
    """`npm ci` refuses a lockfile in which a package's optional dependency (a platform binary
    such as `opencode-darwin-arm64`) has no entry of its own, even one this platform skips; so
    the test command's `npm ci --prefix tests/agents` needs every one listed."""
    lock = json.loads((ROOT / "tests" / "agents" / "package-lock.json").read_text("utf-8"))
    packages: dict[str, dict[str, Any]] = lock["packages"]
    missing = [
        f"{name} (of {key})"
        for key, entry in packages.items()
        for name in entry.get("optionalDependencies", {})
        if not any(place in packages for place in _where_npm_looks(key, name))
    ]
    assert not missing, missing


README_LINES_AT_MOST = 250
FIRST_SCREEN = 45  # lines


def test_the_readme_is_a_front_door() -> None:
    """The README stays short, and both of its commands (the demo, and the test suite as CI
    runs it) are on its first screen."""
    readme = ROOT / "README.md"
    assert len(readme.read_text(encoding="utf-8").splitlines()) <= README_LINES_AT_MOST
    demo = next(s for s in snippets(readme) if "harness run fixtures/demo" in s.code)
    assert demo.code.startswith("python3 -m venv .venv && .venv/bin/pip install")
    assert demo.line < FIRST_SCREEN
    assert _readme_test_command().line < FIRST_SCREEN


def test_no_document_installs_the_package_from_an_index() -> None:
    """The package is not published: every install the docs show is from a checkout
    (`pip install -e '.[extra]'`), never `pip install completion-harness[...]`."""
    pattern = re.compile(r"pip install [^`\n]*[\s'\"]completion-harness\b")  # by name
    found = [
        f"{doc.relative_to(ROOT)}:{number}"
        for doc in DOCS
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, found
