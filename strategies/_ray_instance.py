"""Ray for what runs work on it (a best-of run's attempts, the board's): imported with an
error that says how to install it, an instance for the time of a run, and `RayTasks`, the
connection settings and the open remote function both engines are made of.

Ray is an optional extra (``pip install -e '.[ray]'``), imported only when an engine opens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
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


class RayTasks:
    """Where an engine's Ray tasks run (`address`; None: the instance this process has,
    ``RAY_ADDRESS``'s, or a local one) and what each asks of a worker (`num_cpus`), with the
    remote function it has open while a run uses it."""

    user = "Ray"
    """How errors name the engine ("RayAttempts", "the ray engine")."""

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: float = 1.0,
        init_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.address = address
        self.num_cpus = cpus(num_cpus)
        self.init_options = dict(init_options or {})
        self._remote: Any = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(address={self.address!r}, num_cpus={self.num_cpus:g})"

    @asynccontextmanager
    async def _remote_open(
        self, function: Callable[..., Any], **options: Any
    ) -> AsyncIterator[Any]:
        """Ray connected and `function` made a remote task (``max_retries=0``: an attempt is
        not run twice behind the engine's back), as ``self._remote``, for the block."""
        async with ray_instance(self.user, self.address, self.init_options) as ray:
            self._remote = ray.remote(num_cpus=self.num_cpus, max_retries=0, **options)(function)
            try:
                yield ray
            finally:
                self._remote = None
