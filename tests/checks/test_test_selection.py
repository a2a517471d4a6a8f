"""`checks._test_selection.select`: each runner's own flag to run tests by name, and None
(the whole suite runs) wherever the command cannot be extended safely."""

from __future__ import annotations

import pytest

from checks._test_selection import runner_of, select


@pytest.mark.parametrize(
    ("command", "names", "expected"),
    [
        (
            "python -m pytest -rA tests",
            ["tests/test_calc.py::TestCalc::test_add[1-2]", "tests/test_calc.py::test_sub"],
            "python -m pytest -rA tests -x -k '(test_calc.py and TestCalc and test_add[1-2]) "
            "or (test_calc.py and test_sub)'",
        ),
        (
            "PYTHONPATH=src uv run pytest -v",
            ["t/test_x.py::test_y"],
            "PYTHONPATH=src uv run pytest -v -x -k '(test_x.py and test_y)'",
        ),
        (
            "python3 -m unittest discover -s tests -t . -v",
            ["tests.test_calc.TestCalc.test_add", "tests.test_io"],
            "python3 -m unittest discover -s tests -t . -v -f -k tests.test_calc.TestCalc.test_add"
            " -k tests.test_io",
        ),
        (
            "go test -v ./...",
            ["example.com/calc.TestAdd/with_zero", "example.com/calc.TestAdd/big", "b.TestSub"],
            "go test -v ./... -failfast -run '^(TestAdd|TestSub)$'",
        ),
        (
            "cargo test",
            ["src/lib.rs::tests::add", "tests/it.rs::works"],
            "cargo test -- tests::add works",
        ),
        (
            "cargo test -- --test-threads=1",
            ["src/lib.rs::tests::add"],
            "cargo test -- --test-threads=1 tests::add",
        ),
        (
            "node --test test/",
            ["math > adds (big)", "top"],
            "node --test '--test-name-pattern=^(?:adds\\ \\(big\\)|top)$' test/",
        ),
    ],
)
def test_each_runner_selects_by_its_own_flag(command: str, names: list[str], expected: str) -> None:
    chosen = select(command, names)
    assert chosen is not None
    assert chosen.command == expected
    assert chosen.names == tuple(names)
    assert chosen.runner == runner_of(command)


@pytest.mark.parametrize(
    ("command", "names", "expected"),
    [
        ("pytest -rA", ["t.py::test_a"], "pytest -rA -k '(t.py and test_a)'"),
        ("python -m unittest -v", ["m.T.test_a"], "python -m unittest -v -k m.T.test_a"),
        ("go test -v ./...", ["p.TestA"], "go test -v ./... -run '^(TestA)$'"),
        ("cargo test", ["tests::add"], "cargo test -- tests::add"),
    ],
)
def test_every_selected_test_can_be_asked_to_run(
    command: str, names: list[str], expected: str
) -> None:
    """`stop_first=False` (a rerun, a cached failure seen again): no flag stops the run at the
    first failure."""
    chosen = select(command, names, stop_first=False)
    assert chosen is not None
    assert chosen.command == expected


def test_an_argv_command_gets_the_words_appended() -> None:
    chosen = select(("/venv/bin/python", "-m", "pytest", "tests"), ["tests/test_a.py::test_b"])
    assert chosen is not None
    assert chosen.command == (
        "/venv/bin/python",
        "-m",
        "pytest",
        "tests",
        "-x",
        "-k",
        "(test_a.py and test_b)",
    )


@pytest.mark.parametrize(
    ("command", "names"),
    [
        ("pytest tests | tee log", ["t.py::test_a"]),  # a pipeline: the flag would go to tee
        ("pytest tests && echo ok", ["t.py::test_a"]),
        ("pytest tests > out.txt", ["t.py::test_a"]),
        ("pytest $ARGS", ["t.py::test_a"]),
        ("pytest -k 'slow'", ["t.py::test_a"]),  # it selects already
        ("pytest", ["t.py::test_a[a b]"]),  # not a -k word
        ("pytest", ["t.py::test_and::not"]),
        ("pytest", ["test_a"]),  # not a node id
        ("python -X dev -m pytest", ["t.py::test_a"]),  # an option's value is not read
        ("python run_tests.py", ["t.py::test_a"]),
        ("make test", ["t.py::test_a"]),
        ("go test -run TestA ./...", ["a.TestA"]),
        ("go test ./... -args -v", ["a.TestA"]),
        ("go test ./...", ["a.helper"]),
        ("cargo test", ["src/lib.rs - add (line 5)"]),  # a doc-test
        ("node --test test/*.test.js", ["a"]),  # the shell's glob would be quoted
        ("node --test --test-name-pattern=x", ["a"]),
        ("python -m unittest -k slow", ["tests.test_a.T.test_b"]),
        ("uv run --with x pytest", ["t.py::test_a"]),
        ("pytest 'unclosed", ["t.py::test_a"]),
        ("pytest", []),
    ],
)
def test_what_cannot_be_selected_safely_is_not(command: str, names: list[str]) -> None:
    assert select(command, names) is None
