"""Real model clients: OpenAI-compatible and Anthropic (optional extras), their prices and
retries, and `model_from_config` for spec files.

Importing this package does not import the SDKs; a client imports its SDK on first use.
"""

from ._anthropic import AnthropicClient
from ._model_config import model_from_config
from ._openai import OpenAIClient
from ._pricing import DEFAULT_PRICES, ModelPrice, PriceTable
from ._retry import RetryPolicy, retry_after_seconds

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
