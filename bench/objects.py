"""What a session leaves alive across the model's await, for the cycle collector to track.

    python bench/objects.py                  # both backends
    python bench/objects.py --backend asyncio

W4 runs 10,000 sessions at once: whatever one session holds while its model call is awaited
stays alive through every other session's turn, so it survives the collector's young
generations and joins the oldest, whose full passes then walk every session's objects (bench
W4 prints how much of the wall time those passes take). This counts those objects for one
10-turn session of W4's workload, bare and through the harness: at each model call, after a
collection, the objects the collector tracks that appeared since the previous call (the heap
before it is frozen with `gc.freeze`, so only the new ones are listed), by type.

It counts; it does not time. The model's sleep is the backend's own (0 s), as in W1.
"""

from __future__ import annotations

import argparse
import collections
import gc
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _backends import BACKENDS, Backend
from _bare import bare_script, bare_session
from _workload import bench_harness, configure_logging, harness_session

TURNS = 10


def kind(obj: object) -> str:
    """A readable name for what `obj` is: its type, and a coroutine's function."""
    code = getattr(obj, "cr_code", None)
    if code is not None:
        return f"coroutine {code.co_qualname}"
    return type(obj).__name__


def counts(backend: Backend, side: str) -> list[collections.Counter[str]]:
    """The new tracked objects alive at each model call of one session (and at its end)."""
    seen: list[collections.Counter[str]] = []
    counting = False

    def snapshot() -> None:
        gc.collect()
        seen.append(collections.Counter(kind(o) for o in gc.get_objects()))
        gc.freeze()

    async def sleep(seconds: float) -> None:
        if counting:
            snapshot()
        await backend.sleep(seconds)

    harness = bench_harness(TURNS, sleep, 0.0)
    script = bare_script(TURNS - 1)

    async def session() -> object:
        if side == "bare":
            return await bare_session(script, sleep, 0.0)
        return await harness_session(harness)

    async def main() -> None:
        nonlocal counting
        await session()  # warm-up: caches, interned names, the loop's own structures
        gc.collect()
        gc.freeze()
        counting = True
        await session()
        counting = False
        snapshot()

    try:
        backend.run(main)
    finally:
        gc.unfreeze()
    return seen


def report(backend: Backend) -> None:
    """Print both sides' counts: at the first model call, and one turn's, by type."""
    for side in ("bare", "harness"):
        seen = counts(backend, side)
        start, turn = seen[0], seen[len(seen) // 2]
        print(f"{backend.name} {side}:")
        print(f"  at the first model call: {sum(start.values())} new objects")
        print(f"  at a later model call:   {sum(turn.values())} new objects (one turn's)")
        for name, number in turn.most_common():
            print(f"    {number:3d} {name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--backend", choices=["asyncio", "trio", "both"], default="both")
    args = parser.parse_args(argv)
    configure_logging()
    names = list(BACKENDS) if args.backend == "both" else [args.backend]
    for name in names:
        report(BACKENDS[name])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
