"""Ray for what runs work on it (a best-of run's attempts, the board's): imported with an
error that says how to install it, and an instance for the time of a run.

Ray is an optional extra (``pip install -e '.[ray]'``), imported only when an engine opens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from harness import ConfigurationError


def import_ray(user: str) -> Any:
    """The ``ray`` module; a `ConfigurationError` naming `user` when it is not installed."""
    try:
        import ray
    except ImportError:
        raise ConfigurationError(
            f"{user} needs Ray: pip install 'completion-harness[ray]' "
            "(or pip install -e '.[ray]' in a checkout)"
        ) from None
    return ray


def cpus(num_cpus: object) -> float:
    """`num_cpus` checked: what one Ray task asks of a worker."""
    if isinstance(num_cpus, bool) or not isinstance(num_cpus, int | float) or num_cpus < 0:
        raise ConfigurationError(f"'num_cpus' must be a number >= 0 (got {num_cpus!r})")
    return float(num_cpus)


@asynccontextmanager
async def ray_instance(
    user: str, address: str | None, init_options: Mapping[str, Any]
) -> AsyncIterator[Any]:
    """Ray, connected for the block: the instance this process already has, else the
    cluster at `address`, else (without an address) the one ``RAY_ADDRESS`` names or a local
    one started for the block and stopped after it."""
    ray = import_ray(user)
    started = False
    if not ray.is_initialized():
        options: dict[str, Any] = {"log_to_driver": False, **init_options}
        if address is not None:
            options["address"] = address
        ray.init(**options)
        started = True
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()
