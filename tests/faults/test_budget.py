"""The budget with 16 calls in flight: each call's worst case (estimated input, max output tokens) is reserved on
the run before it is sent, so the spend stays within the budget when calls cost at most their reservation, and the
overshoot is bounded by the in-flight calls' excess over their reservation when they cost more. Prices must be
finite and non-negative."""

from __future__ import annotations

import asyncio
import math

import pytest
from sqlmodel import Session, select

from core.generation import registered_models, run_estimates, runner, runs
from core.generation.llm import config_from_model
from core.generation.providers.base import ModelConfig
from core.store.models import Model, Response
from core.testing.fake_server import FakeLLMServer
from tests.factories import add_model, seed_instances
from tests.faults.conftest import bill, figure, run_row, statuses
from tests.providers.conftest import point_sdks_at

ITEMS = 64
IN_FLIGHT = 16
PRICE = 1000.0  # USD per million tokens, in and out: a few cents a call




@pytest.mark.parametrize("max_output_tokens, share", [
    pytest.param(64, 0.3, id="calls-cost-at-most-their-reservation"),
    pytest.param(4, 0.3, id="calls-cost-more-than-reserved-bounded-overshoot"),
])
def test_budget_with_16_in_flight(engine, monkeypatch, tmp_path, max_output_tokens, share):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    seed_instances(engine, ITEMS)
    add_model(engine, "gpt-x", "openai", price_in=PRICE, price_out=PRICE, max_output_tokens=max_output_tokens)
    with FakeLLMServer(latency_ms=80) as server:
        point_sdks_at(monkeypatch, server)
        run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-x"], concurrency=IN_FLIGHT))
        estimate = run_estimates.estimate_run(engine, run_id)
        budget = estimate.max_cost_usd * share
        result = asyncio.run(runner.execute_run(engine, run_id, overrides={"budget_usd": budget}))
        billed = bill(server, PRICE, PRICE)
        calls = len(server.requests)
    row = run_row(engine, run_id)
    with Session(engine) as session:
        done = session.exec(select(Response).where(Response.run_id == run_id, Response.status == "done")).all()
        config = config_from_model(session.exec(select(Model).where(Model.name == "gpt-x")).one())
    excess = max(0.0, max(r.cost_usd for r in done) - min(config.cost_usd(r.input_tokens, max_output_tokens)
                                                          for r in done))
    bound = IN_FLIGHT * excess  # what the calls in flight can cost beyond their reservations
    overshoot = max(0.0, row.spent_usd - budget)
    figure(f"budget {max_output_tokens=}: budget ${budget:.4f}, spent ${row.spent_usd:.4f} in {calls} calls "
           f"({len(done)} done, {statuses(engine, run_id).get('pending', 0)} pending), overshoot ${overshoot:.4f} "
           f"(bound ${bound:.4f}), bill ${billed:.4f}")
    assert result.status == "budget_stopped" and 0 < len(done) < ITEMS
    assert calls == len(done), "every call sent was saved and counted"
    assert row.spent_usd == pytest.approx(billed) and row.reserved_usd == pytest.approx(0.0, abs=1e-12)
    assert overshoot <= bound + 1e-12
    if max_output_tokens == 64:
        assert overshoot == 0.0


@pytest.mark.parametrize("price_in, price_out, problem", [
    pytest.param(-1.0, 2.0, "input price -1.0 is negative", id="negative"),
    pytest.param(2.0, math.nan, "output price nan is not a finite number", id="nan"),
    pytest.param(math.inf, 2.0, "input price inf is not a finite number", id="infinite"),
])
def test_prices_must_be_finite_and_not_negative(engine, price_in, price_out, problem):
    config = ModelConfig(name="bad", provider="openai", price_input_per_mtok=price_in, price_output_per_mtok=price_out)
    with pytest.raises(ValueError, match=problem):
        registered_models.register_model(engine, config)
    if any(math.isnan(price) for price in (price_in, price_out)):
        return  # SQLite stores NaN as NULL, which the price columns refuse: such a row cannot exist
    seed_instances(engine, 2)
    add_model(engine, "stored-bad", "openai", price_in=price_in, price_out=price_out)
    with pytest.raises(ValueError, match=f"model stored-bad: {problem}"):
        runs.create_run(engine, runs.RunOptions(models=["stored-bad"]))
