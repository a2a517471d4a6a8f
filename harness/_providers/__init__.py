"""Model clients: OpenAI-compatible and Anthropic (optional extras), their prices and retries;
the coding agents run as models (`_cli_agent` is their seam, `_agent_clients` the agents that
print JSON, `_limit_messages` their usage-limit words); and `model_from_config` for spec files.
The `ModelClient` protocol they implement is a value of the root (`harness._model`).

Importing this package does not import the SDKs; a client imports its SDK on first use. Nor
does it import the clients: a spec loaded only for its checks validates a ``[model]`` table
against `MODELS` (in `_model_config`) and must not pay for both clients and their loop.
"""

import typing

from .._lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from ._anthropic import AnthropicClient
    from ._model_config import model_from_config
    from ._openai import OpenAIClient
    from ._pricing import DEFAULT_PRICES, ModelPrice, PriceTable
    from ._retry import RetryPolicy, retry_after_seconds

_LAZY = {
    "AnthropicClient": "._anthropic",
    "model_from_config": "._model_config",
    "OpenAIClient": "._openai",
    "DEFAULT_PRICES": "._pricing",
    "ModelPrice": "._pricing",
    "PriceTable": "._pricing",
    "RetryPolicy": "._retry",
    "retry_after_seconds": "._retry",
}

__all__ = [
    "DEFAULT_PRICES",
    "AnthropicClient",
    "ModelPrice",
    "OpenAIClient",
    "PriceTable",
    "RetryPolicy",
    "model_from_config",
    "retry_after_seconds",
]

__getattr__, __dir__ = _lazy_exports(__name__, globals(), _LAZY)
