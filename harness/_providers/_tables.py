"""`PRICE` and `RETRY`: the schemas of a ``[model]`` table's ``price`` and ``retry`` tables,
which `ModelPrice.from_config` and `RetryPolicy.from_config` read.

Apart from `_pricing` and `_retry` so that checking a spec's ``[model]`` table against its
schema (a stop hook does, at every stop) does not create the price and retry values.
"""

from __future__ import annotations

from .._schema import REQUIRED, Key, Schema

PRICE = Schema(
    "a price table",
    [
        Key("input", "number", "Dollars per million fresh input tokens.", default=REQUIRED),
        Key("output", "number", "Dollars per million output tokens.", default=REQUIRED),
        Key(
            "cached_input",
            "number",
            "Dollars per million tokens read from the prompt cache.",
            default_text="the input price",
        ),
        Key(
            "cache_write",
            "number",
            "Dollars per million tokens written to the prompt cache.",
            default_text="the input price",
        ),
    ],
    heading="model.price",
    help="A model's price, in US dollars per million tokens: `price = { input = 3.0, "
    "output = 15.0 }`.",
)


RETRY = Schema(
    "a retry table",
    [
        Key("max_attempts", "integer", "Attempts in all, the first included.", default=4),
        Key(
            "initial_wait",
            "number",
            "Seconds before the first retry; doubled each time.",
            default=1.0,
        ),
        Key("max_backoff", "number", "The longest backoff, in seconds.", default=30.0),
        Key("jitter", "number", "Up to this many random seconds added to each wait.", default=1.0),
        Key(
            "max_wait",
            "number",
            "A single wait longer than this (a long `Retry-After`) gives up instead.",
            default=120.0,
        ),
    ],
    heading="model.retry",
    help="How a provider client retries rate limits, 5xx errors and timeouts; each wait is "
    "the longer of the backoff and the provider's `Retry-After`, and no wait passes the run's "
    "deadline.",
)
