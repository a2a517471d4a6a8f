"""Prices: per-model lookup, dated snapshots, user extensions, and unknown never being zero."""

from __future__ import annotations

import pytest

from harness import ConfigurationError, ModelPrice, PriceTable
from harness._providers import DEFAULT_PRICES


def test_a_listed_model_and_its_dated_snapshots_share_a_price() -> None:
    """Exact names and dated snapshots match; a longer name never borrows a shorter one's."""
    table = PriceTable.default()
    assert table.lookup("gpt-4o") == DEFAULT_PRICES["gpt-4o"]
    assert table.lookup("gpt-4o-2024-08-06") == DEFAULT_PRICES["gpt-4o"]
    assert table.lookup("gpt-4o-mini-2024-07-18") == DEFAULT_PRICES["gpt-4o-mini"]
    assert table.lookup("claude-sonnet-4-20250514") == DEFAULT_PRICES["claude-sonnet-4"]
    assert table.lookup("claude-sonnet-4-5-20250929") == DEFAULT_PRICES["claude-sonnet-4-5"]
    assert table.lookup("gpt-4o-audio-preview") is None
    assert table.lookup("my-finetune") is None
    assert table.lookup(None) is None
    assert "gpt-4.1" in table
    assert "llama3" not in table


def test_users_extend_and_override_the_table() -> None:
    """with_prices adds models and replaces listed ones, leaving the original untouched."""
    local = ModelPrice(0.0, 0.0)
    table = PriceTable.default().with_prices({"llama3": local, "gpt-4o": ModelPrice(1.0, 2.0)})
    assert table.lookup("llama3") == local
    assert table.lookup("gpt-4o") == ModelPrice(1.0, 2.0)
    assert PriceTable.default().lookup("gpt-4o") == DEFAULT_PRICES["gpt-4o"]
    with pytest.raises(ConfigurationError, match="'x'"):
        PriceTable.default().with_prices({"x": 1.0})  # type: ignore[dict-item]


def test_cost_prices_each_kind_of_token_at_its_rate() -> None:
    """Cache reads and writes default to the input rate unless they have their own."""
    flat = ModelPrice(2.0, 10.0)
    assert flat.cost(fresh_input=1_000_000, output=0, cache_read=1_000_000) == 4.0
    split = ModelPrice(2.0, 10.0, cached_input=0.5, cache_write=2.5)
    total = split.cost(fresh_input=100, output=10, cache_read=1000, cache_write=40)
    assert total == pytest.approx((200 + 100 + 500 + 100) / 1_000_000)


def test_prices_from_a_spec_table_name_the_key_at_fault() -> None:
    """Spec prices need input and output, accept known keys only, and refuse negatives."""
    assert ModelPrice.from_config({"input": 1, "output": 2}, where="m.price") == ModelPrice(1, 2)
    with pytest.raises(ConfigurationError, match=r"m\.price\.output is required"):
        ModelPrice.from_config({"input": 1}, where="m.price")
    with pytest.raises(
        ConfigurationError, match=r"m\.price: unknown key 'cheap' for a price table"
    ):
        ModelPrice.from_config({"input": 1, "output": 2, "cheap": 1}, where="m.price")
    with pytest.raises(ConfigurationError, match=r"m\.price\.input must be a number"):
        ModelPrice.from_config({"input": -1, "output": 2}, where="m.price")
    with pytest.raises(ConfigurationError, match="'output'"):
        ModelPrice(1.0, True)
