"""What a run would cost before it is sent: calls, tokens, cache hits, an upper-bound cost, and the prompts over
their model's context window."""

from __future__ import annotations

import json
import threading
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.generation.llm import cache_key, canonical_request, config_from_model, repeat_config
from core.generation.providers.base import ModelConfig
from core.generation.registered_models import resolve_models
from core.generation.run_prompts import PROMPT_CHUNK, ItemPrompt, PromptBook, PromptKey
from core.generation.runs import (
    RunOptions,
    check_options,
    instance_conditions,
    options_instances,
    pending_items,
    run_options,
)
from core.store.benchmark import benchmark_version
from core.store.db import saved_id
from core.store.models import LLMCall, Model


@dataclass
class Estimate:
    """Calls, tokens and cost a run would need (cached calls are free; output at the max is an upper bound), and the
    prompts over their model's context window: with the 'refuse' policy they fail unsent (`refused`), with
    'truncate' they lose documents from the end (`truncated`; `refused` counts those that still do not fit)."""

    items: int = 0
    calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    max_output_tokens: int = 0
    max_cost_usd: float = 0.0
    per_model: dict[str, dict[str, float]] = field(default_factory=dict)
    context_policy: str = "refuse"
    over_window: int = 0
    truncated: int = 0
    refused: int = 0
    instances: int = 0
    by_condition: dict[str, int] = field(default_factory=dict)  # items per condition name ('' = default)

    def shape(self) -> str:
        """The items as models x (instances x conditions), with each condition's items per model (a condition that
        applies to some question types only has fewer)."""
        models = len(self.per_model) or 1
        parts = ", ".join(f"{name or 'default'} {count // models}" for name, count in self.by_condition.items())
        return (f"items {self.items} = {models} model(s) x {self.items // models} instance-conditions ({self.instances} "
                f"instances x {len(self.by_condition)} conditions; per condition: {parts})")

    def context_summary(self) -> str:
        """What the context policy does with the prompts over their model's context window ('' when none is)."""
        if not self.over_window:
            return ""
        head = f"{self.over_window} prompt(s) exceed their model's context window (policy {self.context_policy}): "
        if self.context_policy == "truncate":
            return head + (f"{self.truncated} will lose documents from the end of the bundle until they fit"
                           + (f"; {self.refused} do not fit even so and will fail unsent" if self.refused else ""))
        return head + f"{self.refused} will fail unsent and cost nothing (--context-policy truncate drops documents)"


CACHE_ENTRIES = 8  # per database: scopes' items and prompt books of the current benchmark version in use


class EstimateCache:
    """What estimates reuse, per database and benchmark version: each scope's (instance, condition) items and each
    (order, seed, context policy)'s prompt book, so a model change only re-prices prompts already built and counted.
    An import or a new instance version changes the benchmark version, so a stale entry is never read; the least
    recently used entries beyond `size` per database are dropped."""

    def __init__(self, size: int = CACHE_ENTRIES) -> None:
        self.size = size
        self._entries: weakref.WeakKeyDictionary[object, OrderedDict[tuple, Any]] = weakref.WeakKeyDictionary()
        self._lock = threading.RLock()

    def scope(self, session: Session, version: tuple, options: RunOptions) -> list[PromptKey]:
        """The (instance id, condition) items the options' protocols, set, domains, modes, limit and conditions select."""
        key = ("scope", version, tuple(options.domains), tuple(options.modes), options.limit, tuple(options.conditions),
               tuple(options.protocols), options.set_id)
        return self._entry(session, key, lambda: _scope_items(session, options))

    def book(self, session: Session, version: tuple, keys: list[PromptKey], options: RunOptions) -> PromptBook:
        """The prompt book of this version under the options' order, seed and context policy, holding `keys`."""
        key = ("book", version, options.order, options.seed, options.context_policy)
        with self._lock:
            book = self._entry(session, key, lambda: PromptBook({}, options.context_policy))
            book.load(session, keys, options.order, options.seed)
        return book

    def clear(self) -> None:
        """Forget everything (the next estimate selects and builds its prompts again)."""
        with self._lock:
            self._entries.clear()

    def _entry(self, session: Session, key: tuple, build: Callable[[], Any]) -> Any:
        with self._lock:
            entries = self._entries.setdefault(session.get_bind(), OrderedDict())
            value = entries.pop(key) if key in entries else build()
            entries[key] = value
            while len(entries) > self.size:
                entries.popitem(last=False)
            return value


ESTIMATE_CACHE = EstimateCache()


def estimate_run(engine: Engine, run_id: int) -> Estimate:
    """Calls, tokens and an upper-bound cost for the run's pending items (cache hits cost nothing)."""
    options = run_options(engine, run_id)
    with Session(engine) as session:
        models = {m.id: m for m in session.exec(select(Model))}
        pairs = [(models[i.model_id], (i.instance_id, i.condition), i.repeat) for i in pending_items(session, run_id)]
        return _estimate_pairs(session, pairs, options, benchmark_version(session))


def estimate_options(engine: Engine, options: RunOptions) -> Estimate:
    """The estimate of a run that `options` would create, without creating it."""
    check_options(options)
    with Session(engine) as session:
        models = resolve_models(session, options.models)
        version = benchmark_version(session)
        items = ESTIMATE_CACHE.scope(session, version, options)
        pairs = [(m, key, repeat) for m in models for key in items for repeat in range(options.repeats)]
        return _estimate_pairs(session, pairs, options, version)


def _scope_items(session: Session, options: RunOptions) -> list[PromptKey]:
    instances = options_instances(session, options)
    return [(saved_id(i), condition) for i, condition in
            (instance_conditions(instances, options.conditions) if instances else [])]


def _estimate_pairs(session: Session, pairs: list[tuple[Model, PromptKey, int]], options: RunOptions,
                    version: tuple) -> Estimate:
    estimate = Estimate(context_policy=options.context_policy, instances=len({key[0] for _, key, _ in pairs}),
                        by_condition=dict(Counter(key[1] for _, key, _ in pairs)))
    book = ESTIMATE_CACHE.book(session, version, [key for _, key, _ in pairs], options)
    configs = {model_id: config_from_model(model) for model_id, model in {m.id: m for m, _, _ in pairs}.items()}
    calls = {(model_id, repeat): _call_identity(repeat_config(configs[model_id], repeat))
             for model_id, repeat in {(m.id, r) for m, _, r in pairs if not m.is_baseline}}
    sendable = []
    for model, key, repeat in pairs:
        prompt = book.item(configs[model.id], key)
        if _count_context(estimate, model.name, prompt):
            call = None if model.is_baseline else _call_key(book, calls[model.id, repeat], key, prompt)
            sendable.append((model, prompt.tokens, call))
    cached = _cached_keys(session, [call for *_, call in sendable if call])
    for model, tokens_in, call in sendable:
        _add_to_estimate(estimate, model, tokens_in, configs[model.id], model.is_baseline or call in cached)
    return estimate


def _call_identity(config: ModelConfig) -> tuple[ModelConfig, str]:
    """The config and what of its calls' cache keys is not the messages, with what picks the fitted prompt."""
    request = canonical_request(config, [])
    return config, json.dumps([request, config.context_window, config.max_output_tokens], sort_keys=True)


def _call_key(book: PromptBook, call: tuple[ModelConfig, str], key: PromptKey, prompt: ItemPrompt) -> str:
    """The cache key of `prompt` sent with the call's config, hashed once per book."""
    config, identity = call
    memo = (identity, key)
    if memo not in book.call_keys:
        book.call_keys[memo] = cache_key(config, prompt.messages)
    return book.call_keys[memo]


def _cached_keys(session: Session, keys: list[str]) -> set[str]:
    """The keys among `keys` that the call cache holds, looked up in chunks (not one query per call)."""
    unique, found = sorted(set(keys)), set[str]()
    for start in range(0, len(unique), PROMPT_CHUNK):
        found.update(session.exec(select(LLMCall.key).where(col(LLMCall.key).in_(unique[start : start + PROMPT_CHUNK]))))
    return found


def _count_context(estimate: Estimate, name: str, prompt: ItemPrompt) -> bool:
    """Count the item and whether it is over its context window; False when it will fail unsent (no call, no cost)."""
    per_model = estimate.per_model.setdefault(name, {"calls": 0, "cached": 0, "max_cost_usd": 0.0, "over_window": 0})
    estimate.over_window += prompt.over_window
    estimate.truncated += prompt.truncated
    estimate.refused += prompt.error is not None
    per_model["over_window"] += prompt.over_window
    if prompt.error is not None:
        estimate.items += 1
    return prompt.error is None


def _add_to_estimate(estimate: Estimate, model: Model, tokens_in: int, config: ModelConfig, cached: bool) -> None:
    estimate.items += 1
    per_model = estimate.per_model.setdefault(model.name, {"calls": 0, "cached": 0, "max_cost_usd": 0.0})
    if cached:
        estimate.cached += 0 if model.is_baseline else 1
        per_model["cached"] += 0 if model.is_baseline else 1
        return
    cost = config.cost_usd(tokens_in, config.max_output_tokens)
    estimate.calls += 1
    estimate.input_tokens += tokens_in
    estimate.max_output_tokens += config.max_output_tokens
    estimate.max_cost_usd += cost
    per_model["calls"] += 1
    per_model["max_cost_usd"] += cost
