"""Default list prices in USD per million tokens (input, output) for common models; edit freely.

Prices as published by the vendors on 2025-11-01. They change: this table is only the default offered when
a model is registered (`gauntlet models add`); the price stored on each Model row is what runs use, and it can
be overridden per model with --price-in/--price-out or edited here.
"""

from __future__ import annotations

import math

PRICES_AS_OF = "2025-11-01"

DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "o3": (2.00, 8.00),
    "o4-mini": (1.10, 4.40),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-sonnet-4.5": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-opus-4.1": (15.00, 75.00),
    "claude-opus-4.5": (5.00, 25.00),
    "claude-haiku-4.5": (1.00, 5.00),
    "claude-3-5-haiku": (0.80, 4.00),
}


def default_price(model_name: str) -> tuple[float, float]:
    """(input, output) USD per million tokens for `model_name`: exact, else longest known prefix, else (0, 0)."""
    name = model_name.lower()
    if name in DEFAULT_PRICES:
        return DEFAULT_PRICES[name]
    normalised = name.replace("-4-5", "-4.5").replace("-4-1", "-4.1")
    matches = [key for key in DEFAULT_PRICES if normalised.startswith(key)]
    return DEFAULT_PRICES[max(matches, key=len)] if matches else (0.0, 0.0)


def price_errors(price_in: float, price_out: float) -> list[str]:
    """Why a pair of prices (USD per million input / output tokens) cannot be used: negative or not finite."""
    problems = []
    for what, value in (("input price", price_in), ("output price", price_out)):
        if not isinstance(value, int | float) or not math.isfinite(value):
            problems.append(f"{what} {value!r} is not a finite number")
        elif value < 0:
            problems.append(f"{what} {value!r} is negative")
    return problems
