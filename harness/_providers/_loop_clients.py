"""`LoopClients`: one SDK client per event loop, reused by every call made in that loop.

Building an SDK's async client is slow (its HTTP client loads the TLS trust store, about
20 ms) and reusing one is fast (its pool keeps connections open). But the pool belongs to the
event loop that first used it: its connections are that loop's sockets and its locks that
loop's primitives, so a client first used under asyncio fails under trio, or in a second
``anyio.run``. Hence one client per running loop, keyed by the loop's native token.

Each client is closed inside its own loop: by `LoopClients.aclose`, or, if nobody calls it,
when the loop shuts down. The second works through a suspended async generator that holds the
client: asyncio (``shutdown_asyncgens``) and trio (``finalize_remaining``) both close the async
generators still alive at the end of a run, and its ``finally`` closes the client there, where
its sockets still work. The generator is pinned to its loop (a `RunVar`), so it lives exactly
as long as the loop unless closed before: left to the garbage collector (a provider client
dropped mid-run), trio would warn and asyncio could cancel its close at shutdown, leaking the
sockets. A client whose API key changed is replaced the same way.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncGenerator, Callable
from typing import Any

import anyio
import structlog
from anyio.lowlevel import RunVar, current_token
from attrs import define, field

_log = structlog.get_logger("harness.providers")

# Closing a pool only closes sockets; the bound keeps a wedged close from holding up a loop's
# shutdown.
CLOSE_TIMEOUT = 5.0


# The keepers (see `LoopClients._keep`) alive in the running loop: held here, they are closed
# by the loop's shutdown, never by the garbage collector.
_KEEPERS: RunVar[set[AsyncGenerator[None, None]]] = RunVar("harness.providers.keepers")


def _keepers() -> set[AsyncGenerator[None, None]]:
    keepers = _KEEPERS.get(None)
    if keepers is None:
        keepers = set()
        _KEEPERS.set(keepers)
    return keepers


def _fingerprint(key: str) -> bytes:
    # The key itself stays with the SDK client only; this tells a changed key from the same.
    return hashlib.sha256(key.encode()).digest()


@define(eq=False)
class _Held:
    client: Any
    fingerprint: bytes = field(repr=False)
    keeper: AsyncGenerator[None, None] | None = field(default=None, repr=False)


class LoopClients:
    """The SDK clients of one provider client, one per event loop that has used it.

    `build(key)` makes a new SDK client for an API key; it is called once per loop (and again
    if the key changes).
    """

    def __init__(self, build: Callable[[str], Any]) -> None:
        self._build = build
        self._held: dict[object, _Held] = {}

    async def get(self, key: str) -> Any:
        """The SDK client of the running loop, built on first use."""
        loop = current_token().native_token
        fingerprint = _fingerprint(key)
        held = self._held.get(loop)
        if held is not None:
            if held.fingerprint == fingerprint:
                return held.client
            await self._close(loop)
        held = _Held(self._build(key), fingerprint)
        held.keeper = keeper = self._keep(loop, held)
        # Registered before the first await, so concurrent first calls share this client.
        self._held[loop] = held
        _keepers().add(keeper)
        await keeper.asend(None)
        return held.client

    async def aclose(self) -> None:
        """Close the running loop's client now (other loops' clients close with their loop)."""
        await self._close(current_token().native_token)

    async def _close(self, loop: object) -> None:
        held = self._held.pop(loop, None)
        if held is not None and held.keeper is not None:
            await held.keeper.aclose()

    async def _keep(self, loop: object, held: _Held) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if self._held.get(loop) is held:
                del self._held[loop]
            if held.keeper is not None:
                _keepers().discard(held.keeper)
            # Trio finalizes leftover generators in a cancelled scope: shield the close.
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT):
                try:
                    await held.client.close()
                except Exception as exc:
                    _log.warning("model.client_close_failed", error=repr(exc))

    def __len__(self) -> int:
        return len(self._held)

    def __repr__(self) -> str:
        return f"LoopClients(open={len(self._held)})"
