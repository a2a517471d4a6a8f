"""Board task files and ``board.toml``: what loads, and errors that name the file and key."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from _board_support import DEMO, task_toml

from strategies.board import (
    Agent,
    AttemptInfo,
    BoardConfigError,
    BoardTask,
    find_cycle,
    load_config,
    load_tasks,
    pool,
)
from strategies.board._tasks import load_task


def _write(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / f"{name}.toml").write_text(text)
    return folder


def test_the_demo_tasks_load_with_their_fields() -> None:
    """Every field of a task file lands on the task; ids sort the result."""
    tasks = load_tasks(DEMO / "tasks")
    assert [t.id for t in tasks] == ["api", "changelog", "docs", "release", "schema"]
    api = next(t for t in tasks if t.id == "api")
    assert (api.title, api.role, api.priority, api.depends_on) == (
        "Users API",
        "backend",
        5,
        ("schema",),
    )
    assert api.body.startswith("Implement every feature")
    assert api.spec.strategy["type"] == "ralph"
    assert len(api.digest) == 64


def test_defaults_title_priority_and_dependencies(tmp_path: Path) -> None:
    """A task needs only id, role, body and a check: title is the id, priority 0, no deps."""
    _write(tmp_path, a='id = "a"\nrole = "r"\nbody = "b"\n[[checks]]\ntype = "always_complete"')
    (task,) = load_tasks(tmp_path)
    assert (task.title, task.priority, task.depends_on) == ("a", 0, ())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id = ", "not valid TOML"),
        ('role = "r"\nbody = "b"', "'id' is required"),
        ('id = "a"\nbody = "b"', "'role' is required"),
        ('id = "a"\nrole = "r"', "'body' is required"),
        ('id = "a b"\nrole = "r"\nbody = "b"', "id must be 1-64 letters"),
        ('id = "a"\nrole = "r"\nbody = "b"\npriority = "high"', "priority must be an int"),
        ('id = "a"\nrole = "r"\nbody = "b"\ndepends_on = "x"', "depends_on must be a list"),
        ('id = "a"\nrole = "r"\nbody = "b"\ndepends_on = ["a"]', "names the task itself"),
        ('id = "a"\nrole = "r"\nbody = "b"\nprompt = "p"', "'prompt' does not belong"),
        ('id = "a"\nrole = "r"\nbody = "b"\n[model]\ntype = "fixture"', "comes from the agent"),
        ('id = "a"\nrole = "r"\nbody = "b"\ncolour = 1', "unknown key 'colour'"),
        ('id = "a"\nrole = "r"\nbody = "b"', "checks is required for a run spec"),
        (
            'id = "a"\nrole = "r"\nbody = "b"\n[[checks]]\ntype = "files"',
            "checks[0].paths is required for a files check",
        ),
        (
            'id = "a"\nrole = "r"\nbody = "b"\n[budget]\nmax_turns = 0\n'
            '[[checks]]\ntype = "always_complete"',
            "max_turns",
        ),
    ],
)
def test_a_malformed_task_file_names_the_file_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    """Each mistake is an error that starts with the file and says which key is wrong."""
    file = _write(tmp_path, bad=text) / "bad.toml"
    with pytest.raises(BoardConfigError) as caught:
        load_tasks(tmp_path)
    assert str(caught.value).startswith(str(file))
    assert message in str(caught.value)


def test_every_problem_of_every_file_is_reported_at_once(tmp_path: Path) -> None:
    """Two broken files and a dangling dependency: one error, one line each (the files'
    own problems first, in file order, then those of the tasks as a set)."""
    _write(
        tmp_path,
        one='id = "one"\nbody = "b"',
        two="id = [",
        three=task_toml("three", depends_on=["ghost"]),
    )
    with pytest.raises(BoardConfigError) as caught:
        load_tasks(tmp_path)
    lines = str(caught.value).splitlines()
    assert len(lines) == 3
    assert lines[0].startswith(str(tmp_path / "one.toml"))
    assert lines[1].startswith(str(tmp_path / "two.toml"))
    assert lines[2].startswith(str(tmp_path / "three.toml"))
    assert "names 'ghost', which is no task's id" in lines[2]


def test_a_dependency_cycle_is_refused_with_its_path_and_files(tmp_path: Path) -> None:
    """a -> b -> c -> a is named, with the three files, before anything runs."""
    _write(
        tmp_path,
        a=task_toml("a", depends_on=["b"]),
        b=task_toml("b", depends_on=["c"]),
        c=task_toml("c", depends_on=["a"]),
        d=task_toml("d", depends_on=["a"]),
    )
    with pytest.raises(BoardConfigError, match=r"dependency cycle: a -> b -> c -> a \(") as caught:
        load_tasks(tmp_path)
    assert str(tmp_path / "c.toml") in str(caught.value)


def test_a_duplicate_id_names_both_files(tmp_path: Path) -> None:
    """Two files with one id: the error names both."""
    _write(tmp_path, first=task_toml("same"), second=task_toml("same"))
    with pytest.raises(BoardConfigError, match="is already the id of") as caught:
        load_tasks(tmp_path)
    assert "first.toml" in str(caught.value)
    assert "second.toml" in str(caught.value)


def test_an_empty_or_missing_folder_is_an_error(tmp_path: Path) -> None:
    """No task files is a mistake, not an empty board that finishes at once."""
    with pytest.raises(BoardConfigError, match="does not exist"):
        load_tasks(tmp_path / "nope")
    with pytest.raises(BoardConfigError, match="no task files"):
        load_tasks(tmp_path)


def test_find_cycle_on_acyclic_and_cyclic_graphs() -> None:
    """A diamond has no cycle; a self-loop through two nodes is found."""
    assert find_cycle({"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": []}) is None
    assert find_cycle({"x": ["y"], "y": ["x"]}) == ["x", "y", "x"]


def test_a_task_reads_like_a_spec_from_its_own_folder(tmp_path: Path) -> None:
    """Paths in a task file are relative to its folder, as in a run spec."""
    (tmp_path / "ws").mkdir()
    file = _write(tmp_path, t=task_toml("t", extra='workspace = "ws"')) / "t.toml"
    task = load_task(file)
    assert isinstance(task, BoardTask)
    assert task.spec.workspace == (tmp_path / "ws").resolve()


def test_board_toml_of_the_demo() -> None:
    """Two agents, backend and docs, whose model tables name a fixture per task."""
    config = load_config(DEMO)
    assert [a.role for a in config.agents] == ["backend", "docs"]
    assert config.settings.workspace_template == (DEMO / "workspace").resolve()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "no such file"),
        ("[board]\n", "at least one [[agents]]"),
        ("[[agents]]\nrole = 'r'\n", "agents[0].model must be a model table"),
        ("[[agents]]\nmodel = {type = 'fixture'}\n", "agents[0]: 'role' must be a non-empty"),
        ("[[agents]]\nrole = 'r'\nmodel = {}\nsize = 2\n", "agents[0].size is not a setting"),
        ("[board]\nmax_attempts = 0\n[[agents]]\nrole='r'\nmodel={}", "'max_attempts' must"),
        ("[board]\nheartbeat = 5\nlease = 2\n[[agents]]\nrole='r'\nmodel={}", "must be longer"),
        ("[board]\nworkspace = 'nope'\n[[agents]]\nrole='r'\nmodel={}", "not an existing folder"),
        ("[boards]\n", "boards is not a setting"),
        ("[ray]\nnum_cpus = -1\n[[agents]]\nrole='r'\nmodel={}", "ray.num_cpus"),
    ],
)
def test_a_malformed_board_toml_names_the_file_and_key(
    tmp_path: Path, text: str | None, message: str
) -> None:
    """Each mistake in board.toml is an error naming the file and the key."""
    if text is not None:
        (tmp_path / "board.toml").write_text(text)
    with pytest.raises(BoardConfigError) as caught:
        load_config(tmp_path)
    assert str(caught.value).startswith(str(tmp_path / "board.toml"))
    assert message in str(caught.value)


def test_placeholders_are_filled_in_every_string_of_the_model_table() -> None:
    """{task}, {attempt}, {agent} and {role} become the attempt's; other text stays."""
    agent = Agent(
        role="docs",
        model={"type": "fixture", "path": "s/{task}.{attempt}.jsonl", "x": ["{agent}/{role}"]},
    )
    filled = agent.model_for(AttemptInfo("api", 2, "docs-1", "docs"))
    assert filled == {"type": "fixture", "path": "s/api.2.jsonl", "x": ["docs-1/docs"]}
    assert agent.name == "docs"


def test_the_pool_takes_the_agents_in_turn() -> None:
    """--agents 3 over [backend, docs] seats backend-1, docs-1, backend-2."""
    agents = [Agent(role="backend", model={}), Agent(role="docs", model={})]
    assert [s.name for s in pool(agents, 3)] == ["backend-1", "docs-1", "backend-2"]
    assert [s.name for s in pool(agents)] == ["backend-1", "docs-1"]
    with pytest.raises(ValueError, match="positive int"):
        pool(agents, 0)


def test_board_all_is_sorted_and_complete() -> None:
    """`strategies.board.__all__` is sorted, each of its names loads (they are lazy), and it
    lists every public name the package has."""
    module = importlib.import_module("strategies.board")
    exported = list(module.__all__)
    assert exported == sorted(exported)
    for name in exported:
        assert hasattr(module, name), f"strategies.board.__all__ names missing {name!r}"
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, type(module))
    }
    assert public == set(exported)
