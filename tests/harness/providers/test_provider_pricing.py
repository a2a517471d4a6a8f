"""Prices: per-model lookup, dated snapshots, user extensions, and unknown never being zero."""

from __future__ import annotations

import pytest

from harness import ConfigurationError, ModelPrice, PriceTable
from harness._providers import DEFAULT_PRICES


@pytest.fixture
def builtin_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import genai_prices` fails, as where the ``prices`` extra is not installed: the
    built-in table decides."""
    import sys

    monkeypatch.setitem(sys.modules, "genai_prices", None)


@pytest.mark.usefixtures("builtin_only")
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


@pytest.mark.usefixtures("builtin_only")
def test_users_extend_and_override_the_table() -> None:
    """with_prices adds models and replaces listed ones, leaving the original untouched."""
    local = ModelPrice(0.0, 0.0)
    table = PriceTable.default().with_prices({"llama3": local, "gpt-4o": ModelPrice(1.0, 2.0)})
    assert table.lookup("llama3") == local
    assert table.lookup("gpt-4o") == ModelPrice(1.0, 2.0)
    assert PriceTable.default().lookup("gpt-4o") == DEFAULT_PRICES["gpt-4o"]
    with pytest.raises(ConfigurationError, match="'x'"):
        PriceTable.default().with_prices({"x": 1.0})  # type: ignore[dict-item]


def test_genai_prices_knows_more_models_and_their_tiers() -> None:
    """With genai-prices installed: a model the built-in table does not list has a price, a
    long prompt is billed at its tier's rate, a model nobody lists stays unknown (never
    zero), and a price given to the table still wins."""
    pytest.importorskip("genai_prices")
    table = PriceTable.default()
    assert "gemini-2.5-pro" not in DEFAULT_PRICES
    gemini = table.lookup("gemini-2.5-pro")
    assert gemini is not None
    assert gemini.cost(fresh_input=1_000_000, output=0) > 0
    sonnet = table.lookup("claude-sonnet-4-5-20250929")
    assert sonnet is not None
    short = sonnet.cost(fresh_input=100_000, output=0)
    long = sonnet.cost(fresh_input=300_000, output=0)
    assert long > 3 * short  # past 200k tokens the whole prompt costs more per token
    assert table.lookup("my-finetune-of-nothing") is None
    own = ModelPrice(1.0, 2.0)
    assert table.with_prices({"gemini-2.5-pro": own}).lookup("gemini-2.5-pro") is own


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
    with pytest.raises(ConfigurationError, match=r"m\.price\.input must be a finite number"):
        ModelPrice.from_config({"input": -1, "output": 2}, where="m.price")
    with pytest.raises(ConfigurationError, match="'output'"):
        ModelPrice(1.0, True)
