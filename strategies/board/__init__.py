"""The task board: a folder of tasks worked by a pool of agents, each task complete only when
its completion check passed, with the board's state in SQLite so a killed board resumes.

::

    board = Board.from_folder("fixtures/board", agents=2)
    result = await board.run()          # or: async with board.stream() as events: ...
    result.complete                     # every task verified complete

The task file format, ``board.toml``, the statuses, the database and the engines are
described in the modules' docstrings and in the README's "Task board" section.
"""

import typing

if typing.TYPE_CHECKING:
    from ._attempt import AttemptOutcome, AttemptSpec, AttemptWatcher, classify, execute_attempt
    from ._board import Board, BoardResult, open_store
    from ._board_config import Agent, AttemptInfo, BoardConfig, BoardSettings, load_config, pool
    from ._cost import AttemptCost, BoardCost, Spending, TaskCost, board_cost
    from ._engine import Engine, LocalEngine
    from ._errors import BoardBusy, BoardConfigError, BoardStateError
    from ._events import KINDS, BoardEvent, BoardSink, StructlogBoardSink
    from ._lock import holder
    from ._ray import RayEngine
    from ._records import STATUSES, AttemptState, TaskState
    from ._recovery import AttemptProgress, AttemptRecord, read_attempt
    from ._state import board_state
    from ._store import BoardStore
    from ._tasks import BoardTask, find_cycle, load_task, load_tasks

# Loaded on first use (PEP 562): `harness board status` reads the database through `_state`
# and `_records` alone, and a `harness` command that is not a board command loads none of it.
_LAZY = {
    "AttemptCost": "._cost",
    "BoardCost": "._cost",
    "Spending": "._cost",
    "TaskCost": "._cost",
    "board_cost": "._cost",
    "AttemptOutcome": "._attempt",
    "AttemptSpec": "._attempt",
    "AttemptWatcher": "._attempt",
    "classify": "._attempt",
    "execute_attempt": "._attempt",
    "Board": "._board",
    "BoardResult": "._board",
    "open_store": "._board",
    "board_state": "._state",
    "Agent": "._board_config",
    "AttemptInfo": "._board_config",
    "BoardConfig": "._board_config",
    "BoardSettings": "._board_config",
    "load_config": "._board_config",
    "pool": "._board_config",
    "Engine": "._engine",
    "LocalEngine": "._engine",
    "KINDS": "._events",
    "BoardEvent": "._events",
    "BoardSink": "._events",
    "StructlogBoardSink": "._events",
    "BoardBusy": "._errors",
    "BoardConfigError": "._errors",
    "BoardStateError": "._errors",
    "holder": "._lock",
    "AttemptProgress": "._recovery",
    "AttemptRecord": "._recovery",
    "read_attempt": "._recovery",
    "RayEngine": "._ray",
    "STATUSES": "._records",
    "AttemptState": "._records",
    "TaskState": "._records",
    "BoardStore": "._store",
    "BoardTask": "._tasks",
    "find_cycle": "._tasks",
    "load_task": "._tasks",
    "load_tasks": "._tasks",
}
_MOVED = {"Progress": "strategies.board.AttemptProgress"}


def __getattr__(name: str) -> object:
    # The helper lives in `harness`: imported at the top, it would load all of `harness` for
    # every board command, `board status` included.
    from harness.extend import lazy_exports

    return lazy_exports(__name__, globals(), _LAZY, moved=_MOVED, stacklevel=3)[0](name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "Agent",
    "AttemptCost",
    "AttemptInfo",
    "AttemptOutcome",
    "AttemptProgress",
    "AttemptRecord",
    "AttemptSpec",
    "AttemptState",
    "AttemptWatcher",
    "Board",
    "BoardBusy",
    "BoardConfig",
    "BoardConfigError",
    "BoardCost",
    "BoardEvent",
    "BoardResult",
    "BoardSettings",
    "BoardSink",
    "BoardStateError",
    "BoardStore",
    "BoardTask",
    "Engine",
    "KINDS",
    "LocalEngine",
    "RayEngine",
    "STATUSES",
    "Spending",
    "StructlogBoardSink",
    "TaskCost",
    "TaskState",
    "board_cost",
    "board_state",
    "classify",
    "execute_attempt",
    "find_cycle",
    "holder",
    "load_config",
    "load_task",
    "load_tasks",
    "open_store",
    "pool",
    "read_attempt",
]
