"""The task board: a folder of tasks worked by a pool of agents, each task complete only when
its completion check passed, with the board's state in SQLite so a killed board resumes.

::

    board = Board.from_folder("fixtures/board", agents=2)
    result = await board.run()          # or: async with board.stream() as events: ...
    result.complete                     # every task verified complete

The task file format, ``board.toml``, the statuses, the database and the engines are
described in the modules' docstrings and in the README's "Task board" section.
"""

from harness.extend import lazy_exports as _lazy_exports

from ._attempt import AttemptOutcome, AttemptSpec, AttemptWatcher, classify, execute_attempt
from ._board import Board, BoardResult, board_state, open_store
from ._board_config import Agent, AttemptInfo, BoardConfig, BoardSettings, load_config, pool
from ._engine import Engine, LocalEngine
from ._events import KINDS, BoardEvent, BoardSink, StructlogBoardSink
from ._lock import BoardBusy, holder
from ._progress import AttemptProgress, AttemptRecord, read_attempt
from ._ray import RayEngine
from ._records import STATUSES, AttemptState, TaskState
from ._schema import BoardStateError
from ._store import BoardStore
from ._tasks import BoardConfigError, BoardTask, find_cycle, load_task, load_tasks

__all__ = [
    "Agent",
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
    "StructlogBoardSink",
    "TaskState",
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


# Renamed, importable from the old name for one release with a DeprecationWarning.
__getattr__, __dir__ = _lazy_exports(
    __name__, globals(), {}, moved={"Progress": "strategies.board.AttemptProgress"}
)
