"""Prices per model, and the cost of one call.

Prices are US dollars per million tokens. With `genai-prices` installed (the ``prices``
extra), a model's price comes from its data, which knows far more models, their dated
snapshots and their tiers (a long prompt billed at a higher rate), and is kept current by its
maintainers; the table here is the fallback, for a model it does not list or where it is not
installed. A price of your own (`PriceTable.with_prices`, or a client's `ModelPrice`) wins
over both. A model neither knows has an unknown price: its calls report ``cost_usd=None``,
never zero, and a cost budget refuses to run with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from attrs import frozen

from .._errors import ConfigurationError
from ._tables import PRICE

# A dated snapshot or alias of a listed model: "gpt-4o-2024-08-06", "claude-sonnet-4-20250514".
_SNAPSHOT = re.compile(r"^-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def _rate(name: str, value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (math.isfinite(value) and value >= 0)
    ):
        raise ConfigurationError(f"{name} must be a finite number of dollars >= 0 (got {value!r})")
    return float(value)


@frozen
class ModelPrice:
    """Dollars per million tokens: fresh input, output, cache reads and cache writes.

    `cached_input` and `cache_write` default to the input price when a provider has no
    separate rate for them.
    """

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def __attrs_post_init__(self) -> None:
        _rate("'input'", self.input)
        _rate("'output'", self.output)
        if self.cached_input is not None:
            _rate("'cached_input'", self.cached_input)
        if self.cache_write is not None:
            _rate("'cache_write'", self.cache_write)

    @classmethod
    def from_config(cls, table: Mapping[str, object], *, where: str) -> ModelPrice:
        """Build from a spec table ``{input = 3.0, output = 15.0, cached_input = 0.3}``."""
        PRICE.validate(table, where)
        return cls(**{key: _rate(f"{where}.{key}", value) for key, value in table.items()})

    def cost(
        self, *, fresh_input: int, output: int, cache_read: int = 0, cache_write: int = 0
    ) -> float:
        """Dollars for one call, given its tokens split by how they are billed."""
        cached = self.input if self.cached_input is None else self.cached_input
        write = self.input if self.cache_write is None else self.cache_write
        total = (
            fresh_input * self.input
            + output * self.output
            + cache_read * cached
            + cache_write * write
        )
        return total / 1_000_000


@frozen
class ListedPrice(ModelPrice):
    """A price from `genai-prices`: the rates of its base tier for display, and the cost of a
    call computed by it, tiers included."""

    model_ref: str = ""

    def cost(
        self, *, fresh_input: int, output: int, cache_read: int = 0, cache_write: int = 0
    ) -> float:
        from genai_prices import Usage, calc_price

        usage = Usage(
            input_tokens=fresh_input + cache_read + cache_write,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            output_tokens=output,
        )
        return float(calc_price(usage, self.model_ref).total_price)


def listed_price(model: str) -> ListedPrice | None:
    """`model`'s price in `genai-prices`, or None (not installed, or it does not list it)."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError:
        return None
    try:
        found = calc_price(Usage(input_tokens=0, output_tokens=0), model).model_price
    except LookupError:
        return None

    def rate(value: object) -> float | None:
        if value is None:
            return None
        return float(getattr(value, "base", value))  # type: ignore[arg-type]

    input_rate, output_rate = rate(found.input_mtok), rate(found.output_mtok)
    if input_rate is None or output_rate is None:
        return None  # a model priced some other way (per request, say): not a token price
    return ListedPrice(
        input_rate,
        output_rate,
        rate(found.cache_read_mtok),
        rate(found.cache_write_mtok),
        model_ref=model,
    )


@frozen
class PriceTable:
    """Model name to `ModelPrice`; a dated snapshot of a listed model has the same price."""

    prices: Mapping[str, ModelPrice]

    @classmethod
    def default(cls) -> PriceTable:
        """The list prices this package ships (see `DEFAULT_PRICES`)."""
        return cls(DEFAULT_PRICES)

    def with_prices(self, extra: Mapping[str, ModelPrice]) -> PriceTable:
        """A copy with `extra` added; an entry for a model already listed replaces it."""
        for name, price in extra.items():
            if not isinstance(price, ModelPrice):
                raise ConfigurationError(
                    f"the price of {name!r} must be a ModelPrice (got {type(price).__name__})"
                )
        return PriceTable({**self.prices, **extra})

    def lookup(self, model: str | None) -> ModelPrice | None:
        """The price of `model`, or None when it is unknown: a price given to this table
        first, then `genai-prices`' when it is installed, then the built-in list."""
        if not model:
            return None
        own = self._match(model)
        if own is not None and own is not _builtin(model):  # a price given to this table
            return own
        return listed_price(model) or own

    def _match(self, model: str) -> ModelPrice | None:
        exact = self.prices.get(model)
        if exact is not None:
            return exact
        for name in sorted(self.prices, key=len, reverse=True):
            if model.startswith(name) and _SNAPSHOT.match(model[len(name) :]):
                return self.prices[name]
        return None

    def __contains__(self, model: object) -> bool:
        return isinstance(model, str) and self.lookup(model) is not None


DEFAULT_PRICES: Mapping[str, ModelPrice] = {
    # OpenAI list prices (cached input is the prompt-caching rate).
    "gpt-4o": ModelPrice(2.50, 10.00, 1.25),
    "gpt-4o-mini": ModelPrice(0.15, 0.60, 0.075),
    "gpt-4.1": ModelPrice(2.00, 8.00, 0.50),
    "gpt-4.1-mini": ModelPrice(0.40, 1.60, 0.10),
    "gpt-4.1-nano": ModelPrice(0.10, 0.40, 0.025),
    "gpt-5": ModelPrice(1.25, 10.00, 0.125),
    "gpt-5-mini": ModelPrice(0.25, 2.00, 0.025),
    "gpt-5-nano": ModelPrice(0.05, 0.40, 0.005),
    "o3": ModelPrice(2.00, 8.00, 0.50),
    "o4-mini": ModelPrice(1.10, 4.40, 0.275),
    # Anthropic list prices (cache reads 0.1x input, 5-minute cache writes 1.25x input).
    "claude-opus-4-5": ModelPrice(5.00, 25.00, 0.50, 6.25),
    "claude-opus-4-1": ModelPrice(15.00, 75.00, 1.50, 18.75),
    "claude-opus-4": ModelPrice(15.00, 75.00, 1.50, 18.75),
    "claude-sonnet-4-5": ModelPrice(3.00, 15.00, 0.30, 3.75),
    "claude-sonnet-4": ModelPrice(3.00, 15.00, 0.30, 3.75),
    "claude-haiku-4-5": ModelPrice(1.00, 5.00, 0.10, 1.25),
    "claude-3-5-haiku": ModelPrice(0.80, 4.00, 0.08, 1.00),
}


def _builtin(model: str) -> ModelPrice | None:
    """The built-in list's price of `model` (a dated snapshot of a listed one included)."""
    return PriceTable(DEFAULT_PRICES)._match(model)
