"""The run estimate (calls, cached calls, tokens, upper-bound cost, context-window counts, per model) equals the
computation it replaced (issue 42): every item's prompt fitted to its model's window, hashed and looked up in the call
cache one by one, summed in item order, with nothing memoised. On a sample benchmark (cached calls, windows that
truncate or refuse, repeats, baselines) and on a small copy of the paper-scale synthetic results."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict

import pytest
from sqlmodel import Session, select

from bench.make_synthetic_results import make_results
from core.generation import llm, registered_models, run_estimates, runs
from core.generation.providers.base import ModelConfig
from core.generation.run_prompts import fit_context, load_prompt_plans
from core.store.db import make_engine, saved_id
from core.store.models import LLMCall, Model
from tests.generation.test_estimate_cache import answer_half


def reference_estimate(engine, options: runs.RunOptions) -> dict:
    """The estimate item by item, as before issue 42: models x items x repeats in the options' order."""
    with Session(engine) as session:
        models = registered_models.resolve_models(session, options.models)
        instances = runs.options_instances(session, options)
        items = [(saved_id(i), c) for i, c in (runs.instance_conditions(instances, options.conditions) if instances
                                                 else [])]
        pairs = [(m, key, repeat) for m in models for key in items for repeat in range(options.repeats)]
        return asdict(reference_pairs(session, pairs, options))


def reference_pairs(session: Session, pairs: list, options: runs.RunOptions) -> run_estimates.Estimate:
    """The estimate of (model, item, repeat) pairs, each priced on its own (no book, no memo, one lookup per call)."""
    estimate = run_estimates.Estimate(context_policy=options.context_policy,
                                      instances=len({key[0] for _, key, _ in pairs}),
                                      by_condition=dict(Counter(key[1] for _, key, _ in pairs)))
    plans = load_prompt_plans(session, [key for _, key, _ in pairs], options.order, options.seed)
    for model, key, repeat in pairs:
        config = llm.config_from_model(model)
        prompt = fit_context(plans[key], config, options.context_policy)
        per_model = estimate.per_model.setdefault(model.name, {"calls": 0, "cached": 0, "max_cost_usd": 0.0,
                                                               "over_window": 0})
        estimate.over_window += prompt.over_window
        estimate.truncated += prompt.truncated
        estimate.refused += prompt.error is not None
        per_model["over_window"] += prompt.over_window
        estimate.items += 1
        if prompt.error is not None:
            continue
        call = None if model.is_baseline else llm.cache_key(llm.repeat_config(config, repeat), prompt.messages)
        if model.is_baseline or session.get(LLMCall, call) is not None:
            estimate.cached += 0 if model.is_baseline else 1
            per_model["cached"] += 0 if model.is_baseline else 1
            continue
        cost = config.cost_usd(prompt.tokens, config.max_output_tokens)
        estimate.calls += 1
        estimate.input_tokens += prompt.tokens
        estimate.max_output_tokens += config.max_output_tokens
        estimate.max_cost_usd += cost
        per_model["calls"] += 1
        per_model["max_cost_usd"] += cost
    return estimate


def windowed(engine, name: str, window: int) -> None:
    """Register `name` with a context window of `window` tokens (64 of them reserved for the output)."""
    registered_models.register_model(engine, ModelConfig(
        name=name, provider="openai", model_name=name, context_window=window, max_output_tokens=64,
        price_input_per_mtok=3.0, price_output_per_mtok=11.0))


@pytest.fixture
def sample(mixed):
    """The mixed benchmark with half of gpt-x's prompts in the call cache and two models whose windows are too
    small for some prompts (tight) or every one (tiny)."""
    answer_half(mixed, "gpt-x")
    windowed(mixed, "tight", 200)
    windowed(mixed, "tiny", 130)
    run_estimates.ESTIMATE_CACHE.clear()
    yield mixed
    run_estimates.ESTIMATE_CACHE.clear()


SAMPLE = [
    pytest.param(runs.RunOptions(models=["gpt-x"]), id="half-cached"),
    pytest.param(runs.RunOptions(models=["gpt-x", "tight", "baseline:extractive"]), id="paid-windowed-baseline"),
    pytest.param(runs.RunOptions(models=["tight", "gpt-x"], repeats=3), id="repeats"),
    pytest.param(runs.RunOptions(models=["tight", "tiny", "gpt-x"], context_policy="truncate"), id="truncate"),
    pytest.param(runs.RunOptions(models=["tiny", "gpt-x"], conditions=["", "closed_book"]), id="refuse-conditions"),
    pytest.param(runs.RunOptions(models=["gpt-x"], limit=3, order="shuffle", seed=7), id="limit-shuffled"),
    pytest.param(runs.RunOptions(models=["tight", "gpt-x", "tight"]), id="a-model-named-twice"),
]


@pytest.mark.parametrize("options", SAMPLE)
def test_estimate_equals_the_item_by_item_computation_on_a_sample(sample, options):
    expected = reference_estimate(sample, options)
    for models in (["tight"], ["gpt-x", "baseline:always-refuse"], options.models):  # warm, then as the page asks
        run_estimates.estimate_options(sample, runs.RunOptions(**{**vars(options), "models": models}))
    assert asdict(run_estimates.estimate_options(sample, options)) == expected


def test_the_sample_reaches_every_branch(sample):
    truncated = reference_estimate(sample, runs.RunOptions(models=["tight", "tiny", "gpt-x"], context_policy="truncate"))
    assert truncated["truncated"] and truncated["refused"] and truncated["cached"] and truncated["calls"]


def test_run_estimate_equals_the_item_by_item_computation(sample):
    options = runs.RunOptions(models=["gpt-x", "tight", "baseline:extractive"], repeats=2)
    run_id = runs.create_run(sample, options)
    with Session(sample) as session:
        models = {m.id: m for m in session.exec(select(Model))}
        pairs = [(models[i.model_id], (i.instance_id, i.condition), i.repeat)
                 for i in runs.pending_items(session, run_id)]
        expected = asdict(reference_pairs(session, pairs, runs.run_options(sample, run_id)))
    assert asdict(run_estimates.estimate_run(sample, run_id)) == expected


@pytest.fixture
def synthetic(db_url):
    """A small copy of the paper-scale synthetic results the dashboards bench reads (bench/make_synthetic_results),
    with a third of one model's prompts answered in the call cache."""
    make_results(db_url, n_models=3, n_instances=60, seed=5)
    engine = make_engine(db_url)
    with Session(engine) as session:
        names = sorted(m.name for m in session.exec(select(Model)) if not m.is_baseline)
    answer_third(engine, names[0])
    run_estimates.ESTIMATE_CACHE.clear()
    yield engine, names
    run_estimates.ESTIMATE_CACHE.clear()
    engine.dispose()


def answer_third(engine, name: str) -> None:
    """Store `name`'s answer to every third item of the default scope in the call cache."""
    with Session(engine) as session:
        config = llm.config_from_model(session.exec(select(Model).where(Model.name == name)).one())
        instances = runs.options_instances(session, runs.RunOptions(models=[name]))
        plans = load_prompt_plans(session, [(saved_id(i), "") for i in instances][::3], "stored", 0)
        for plan in plans.values():
            session.add(LLMCall(key=llm.cache_key(config, plan.messages), provider=config.provider,
                                model_name=config.model_name, text="cached answer"))
        session.commit()


@pytest.mark.parametrize("pick", [
    pytest.param(lambda names: names[:2], id="two-real-models"),  # the bench's filter change
    pytest.param(lambda names: [names[2], names[0], "baseline:always-refuse"], id="three-with-a-baseline"),
])
def test_estimate_equals_the_item_by_item_computation_on_synthetic_results(synthetic, pick):
    engine, names = synthetic
    options = runs.RunOptions(models=pick(names))
    expected = reference_estimate(engine, options)
    assert expected["cached"] > 0 and expected["calls"] > 0
    for models in ([names[1]], options.models):
        assert asdict(run_estimates.estimate_options(engine, runs.RunOptions(models=models))) == (
            reference_estimate(engine, runs.RunOptions(models=models)))
    assert asdict(run_estimates.estimate_options(engine, options)) == expected
