"""A spec names a check of its own: ``type = "python"``, ``function = "package.module:name"``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from _checks_support import snapshot

from checks import CompletionCheck, check_from_config
from harness import ConfigurationError
from strategies import SpecError, load_spec
from strategies._cli import main

MODULE = '''
from pathlib import Path


class LineCount:
    """Done when `path` has at least `lines` lines."""

    def __init__(self, path, lines=1):
        self.path = path
        self.lines = lines

    async def check(self, state):
        file = Path(state.workspace) / self.path
        found = len(file.read_text().splitlines()) if file.exists() else 0
        if found >= self.lines:
            return None
        return f"{self.path} has {found} lines; it needs {self.lines}"

    def description(self):
        return f"{self.path} has at least {self.lines} lines"


def line_count(path, lines=1):
    return LineCount(path, lines)


READY = LineCount("notes.txt", 2)
NOT_CALLABLE = 42


def gives_text(**settings):
    return "done"


async def is_async(path):
    return LineCount(path)


def refuses(path):
    raise ValueError(f"no such thing as {path}")
'''


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh module of checks, importable under a name no other test uses."""
    name = f"custom_checks_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.mark.anyio
async def test_a_function_builds_the_check_with_the_extra_keys(module: str, tmp_path: Path) -> None:
    """The table's other keys are the function's keyword arguments; the check runs as built."""
    table = {"type": "python", "function": f"{module}:line_count", "path": "notes.txt", "lines": 2}
    check = check_from_config(table, where="checks[0]")
    assert isinstance(check, CompletionCheck)
    assert check.description() == "notes.txt has at least 2 lines"
    (tmp_path / "notes.txt").write_text("one\n")
    assert await check.check(snapshot(tmp_path)) == "notes.txt has 1 lines; it needs 2"
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    assert await check.check(snapshot(tmp_path)) is None


def test_a_class_and_a_check_object_are_named_directly(module: str) -> None:
    """A class is a callable that returns a check; a check object is used as it is."""
    made = check_from_config(
        {"type": "python", "function": f"{module}:LineCount", "path": "a.txt"}, where="c"
    )
    assert made.description() == "a.txt has at least 1 lines"
    ready = check_from_config({"type": "python", "function": f"{module}:READY"}, where="c")
    assert ready.description() == "notes.txt has at least 2 lines"


@pytest.mark.parametrize(
    ("function", "extra", "message"),
    [
        ("no_colon", {}, "c.function must be 'package.module:name' (got 'no_colon')"),
        (":name", {}, "c.function must be 'package.module:name'"),
        ("nowhere_at_all_xyz:f", {}, "c.function: cannot import 'nowhere_at_all_xyz': no module"),
        ("{m}:missing", {}, "c.function: '{m}' has no attribute 'missing'"),
        ("{m}:NOT_CALLABLE", {}, "is neither a CompletionCheck nor callable (it is a int)"),
        ("{m}:gives_text", {}, "returned str, not a CompletionCheck"),
        ("{m}:is_async", {"path": "a"}, "an async check, called as {m}:is_async(state, path=..."),
        ("{m}:refuses", {"path": "x"}, "c: calling {m}:refuses(path='x') failed: ValueError"),
        ("{m}:line_count", {"colour": 1}, "c: calling {m}:line_count(colour=1) failed: TypeError"),
        ("{m}:READY", {"lines": 3}, "is a check, not a function that makes one"),
    ],
)
def test_mistakes_name_the_key_and_what_is_wrong(
    module: str, function: str, extra: dict[str, object], message: str
) -> None:
    """A missing module or attribute, something not callable, a wrong return and a failing
    call are configuration errors naming the table and the key, never a traceback."""
    table = {"type": "python", "function": function.format(m=module), **extra}
    with pytest.raises(ConfigurationError) as caught:
        check_from_config(table, where="c")
    assert message.format(m=module) in str(caught.value)


def test_a_broken_module_is_an_error_naming_the_import(tmp_path: Path, module: str) -> None:
    """A module that fails while importing is reported with its error, not a traceback."""
    (tmp_path / f"{module}_broken.py").write_text("raise RuntimeError('half written')\n")
    with pytest.raises(ConfigurationError, match=r"importing .* failed: RuntimeError: half"):
        check_from_config({"type": "python", "function": f"{module}_broken:f"}, where="c")


def test_spec_errors_name_the_file_and_table(tmp_path: Path, module: str) -> None:
    """Through a spec, the error names the spec file, the checks table and the key."""
    spec = tmp_path / "spec.toml"
    spec.write_text(f'[[checks]]\ntype = "python"\nfunction = "{module}:missing"\n')
    with pytest.raises(SpecError) as caught:
        load_spec(spec, purpose="checks")
    assert str(caught.value).startswith(f"{spec}: checks[0].function: '{module}' has no")


def test_harness_check_runs_a_python_check(
    tmp_path: Path, module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`harness check` runs a spec's custom check against the workspace."""
    (tmp_path / "ws").mkdir()
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'workspace = "ws"\n[[checks]]\ntype = "python"\n'
        f'function = "{module}:line_count"\npath = "notes.txt"\nlines = 2\n'
    )
    assert main(["check", str(spec)]) == 1
    assert "notes.txt has 0 lines; it needs 2" in capsys.readouterr().out
    (tmp_path / "ws" / "notes.txt").write_text("a\nb\n")
    assert main(["check", str(spec)]) == 0
    assert "1 passed, 0 failed" in capsys.readouterr().out
