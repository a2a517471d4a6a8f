"""The `ModelClient` protocol: one async call from a request to an assistant turn."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ._messages import ModelRequest, ModelResponse


@runtime_checkable
class ModelClient(Protocol):
    """Anything that turns a `ModelRequest` into a `ModelResponse`.

    Raise `ModelError` for provider failures; the loop halts with `ModelFailed` and keeps the
    transcript. A client whose prices are unknown should set ``prices_known = False`` so a
    cost budget is refused up front.
    """

    async def complete(self, request: ModelRequest) -> ModelResponse: ...
