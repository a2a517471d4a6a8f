"""Running only some tests by name: the suite's command with the runner's own selection flag.

`select(command, names)` gives the command that runs just `names` (as the check reads them
from the runner's output), stopping at the first failure where the runner can, or None when
it cannot be done safely; then the whole suite runs, as without a selection.

- pytest: ``-x -k "test_calc.py and test_add"`` (one term per node id; pytest 7 or later);
- unittest: ``-f -k tests.test_calc.TestCalc.test_add`` (a substring of the test's id);
- go test: ``-failfast -run '^(TestAdd|TestSub)$'`` (the top-level tests: their subtests run);
- cargo test: ``-- tests::add`` (libtest filters; cargo stops after the first failing binary);
- node --test: ``--test-name-pattern='^(?:add|sub)$'`` (the tests' own names, right after
  ``--test``; node has no flag to stop at the first failure).

Recognised: the runner's program (``pytest``, ``python -m pytest``/``unittest``, ``go
test``, ``cargo test``, ``node --test``), after ``VAR=value`` words and ``uv``/``poetry``/
``pipenv run``. A shell line is only extended when it is one simple command (no ``|``,
``&&``, ``;``, redirection, ``$`` or backquote); a command that already selects (``-k``,
``-run``, ``--test-name-pattern``, ``go test -args``) is left alone. A selection may run a few
more tests than asked (a substring of a name); only the failure of a test that was asked for
counts, so that can cost time but never decides a verdict.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import PurePath

from attrs import frozen

_OPERATORS = frozenset("|&;<>()")
_UNSAFE = frozenset("$`\n")
_GLOB = frozenset("*?[")
_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)?)?(?:\.exe)?$")
_PYTEST_IDENT = re.compile(r"^[\w.+\-\[\]/\\]+$")
_PYTEST_KEYWORDS = frozenset({"and", "or", "not"})
_UNITTEST_NAME = re.compile(r"^[\w.]+$")
_GO_TEST = re.compile(r"(?:^|\.)(?P<test>(?:Test|Example|Fuzz)\w*)(?:/|$)")
_CARGO_NAME = re.compile(r"^(?:.*?\.rs::)?(?P<name>\w+(?:::\w+)*)$")
_WRAPPERS = frozenset({"uv", "poetry", "pipenv"})
_STOP_FLAGS = {"pytest": "-x", "unittest": "-f", "go test": "-failfast"}


@frozen
class Selection:
    """The command that runs only `names`, for `runner`."""

    runner: str
    command: str | tuple[str, ...]
    names: tuple[str, ...]


def runner_of(command: str | Sequence[str]) -> str | None:
    """The runner `command` starts (as `TestResults.runner` names it), or None."""
    words = _words(command)
    if words is None:
        return None
    found = _find(words)
    return found[0] if found is not None else None


def select(
    command: str | Sequence[str], names: Sequence[str], *, stop_first: bool = True
) -> Selection | None:
    """The command that runs only `names`, or None when the runner cannot select them; with
    `stop_first` False, every one of them runs even after one fails (no ``-x``,
    ``-f``, ``-failfast``)."""
    if not names:
        return None
    words = _words(command)
    if words is None:
        return None
    found = _find(words)
    if found is None:
        return None
    runner, start = found
    rest = words[start:]
    wanted = tuple(dict.fromkeys(names))
    if runner == "pytest":
        extra = _pytest(rest, wanted)
    elif runner == "unittest":
        extra = _unittest(rest, wanted)
    elif runner == "go test":
        extra = _go(rest, wanted)
    elif runner == "cargo test":
        extra = _cargo(rest, wanted)
    else:
        return _node(command, words, wanted)
    if extra is None:
        return None
    if not stop_first and runner in _STOP_FLAGS:
        extra.remove(_STOP_FLAGS[runner])
    if isinstance(command, str):
        return Selection(runner, f"{command} {shlex.join(extra)}", wanted)
    return Selection(runner, (*command, *extra), wanted)


def _words(command: str | Sequence[str]) -> list[str] | None:
    """The command's words; None for a shell line that is more than one simple command."""
    if not isinstance(command, str):
        return list(command)
    if any(c in _UNSAFE for c in command):
        return None
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # an unclosed quote
        return None
    if any(word and set(word) <= _OPERATORS for word in words):
        return None
    return words


def _find(words: list[str]) -> tuple[str, int] | None:
    """(the runner, the index of its first argument), or None."""
    i = 0
    while i < len(words) and re.match(r"^\w+=", words[i]):
        i += 1
    wrapper = words[i : i + 2]
    if len(wrapper) == 2 and PurePath(wrapper[0]).name in _WRAPPERS and wrapper[1] == "run":
        i += 2
        if i < len(words) and words[i].startswith("-"):
            return None  # the wrapper's own options: not read
    if i >= len(words):
        return None
    program = PurePath(words[i]).name
    after = words[i + 1 :]
    if program in ("pytest", "py.test"):
        return "pytest", i + 1
    if _PYTHON.match(program):
        for j, word in enumerate(after):
            if word == "-m" and j + 1 < len(after):
                module = after[j + 1]
                if module in ("pytest", "unittest"):
                    return module, i + j + 3
                return None
            if not word.startswith("-"):
                return None  # a script, or an option's value: not read
        return None
    if program in ("go", "cargo") and after[:1] == ["test"]:
        return f"{program} test", i + 2
    if program == "node" and "--test" in after:
        return "node --test", i + 1
    return None


def _pytest(rest: list[str], names: tuple[str, ...]) -> list[str] | None:
    if any(w == "-k" or (w.startswith("-k") and not w.startswith("--")) for w in rest):
        return None
    terms = []
    for name in names:
        path, *parts = name.split("::")
        if not parts:
            return None
        words = [PurePath(path).name, *parts]
        if not all(_PYTEST_IDENT.match(w) and w.lower() not in _PYTEST_KEYWORDS for w in words):
            return None
        terms.append(f"({' and '.join(words)})")
    return ["-x", "-k", " or ".join(terms)]


def _unittest(rest: list[str], names: tuple[str, ...]) -> list[str] | None:
    if any(w == "-k" for w in rest) or not all(_UNITTEST_NAME.match(n) for n in names):
        return None
    return ["-f", *(word for name in names for word in ("-k", name))]


def _go(rest: list[str], names: tuple[str, ...]) -> list[str] | None:
    if any(w in ("-args", "--args") or w.lstrip("-").startswith("run") for w in rest):
        return None
    tops = []
    for name in names:
        match = _GO_TEST.search(name)
        if match is None:
            return None
        tops.append(match["test"])
    return ["-failfast", "-run", f"^({'|'.join(dict.fromkeys(tops))})$"]


def _cargo(rest: list[str], names: tuple[str, ...]) -> list[str] | None:
    filters = []
    for name in names:
        match = _CARGO_NAME.match(name)
        if match is None:
            return None  # a doc-test (``src/lib.rs - add (line 5)``) is not selected by name
        filters.append(match["name"])
    return filters if "--" in rest else ["--", *filters]


def _node(
    command: str | Sequence[str], words: list[str], names: tuple[str, ...]
) -> Selection | None:
    if any(w.startswith("--test-name-pattern") for w in words):
        return None
    if isinstance(command, str) and any(c in _GLOB for c in command):
        return None  # the line is rebuilt below, which would quote a glob the shell expands
    leaves = [re.escape(name.rsplit(" > ", 1)[-1]) for name in names]
    pattern = f"--test-name-pattern=^(?:{'|'.join(leaves)})$"
    at = words.index("--test") + 1
    rebuilt = [*words[:at], pattern, *words[at:]]
    if isinstance(command, str):
        return Selection("node --test", shlex.join(rebuilt), names)
    return Selection("node --test", tuple(rebuilt), names)
