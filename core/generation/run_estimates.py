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

from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, select

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
        models = {saved_id(m): m for m in session.exec(select(Model))}
        pairs = [(i.model_id, (i.instance_id, i.condition), i.repeat) for i in pending_items(session, run_id)]
        return _estimate_pairs(session, pairs, models, options, benchmark_version(session))


def estimate_options(engine: Engine, options: RunOptions) -> Estimate:
    """The estimate of a run that `options` would create, without creating it."""
    check_options(options)
    with Session(engine) as session:
        chosen = resolve_models(session, options.models)  # in the order named (a name given twice counts twice)
        models = {saved_id(m): m for m in chosen}
        version = benchmark_version(session)
        items = ESTIMATE_CACHE.scope(session, version, options)
        pairs = [(model_id, key, repeat) for model_id in map(saved_id, chosen) for key in items
                 for repeat in range(options.repeats)]
        return _estimate_pairs(session, pairs, models, options, version)


def _scope_items(session: Session, options: RunOptions) -> list[PromptKey]:
    instances = options_instances(session, options)
    return [(saved_id(i), condition) for i, condition in
            (instance_conditions(instances, options.conditions) if instances else [])]


Pair = tuple[int, PromptKey, int]  # (model id, (instance id, condition), repeat): one item of a run


@dataclass
class _Priced:
    """A model of the estimate, its row read once: its config, the book's prompts fitted to its context window, its
    calls' cache keys per repeat (None for a baseline, which calls nothing), and its tally: calls paid, calls cached,
    input tokens and cost of the paid ones, prompts over its window."""

    name: str
    baseline: bool
    config: ModelConfig
    prompts: dict[PromptKey, ItemPrompt]
    keys: dict[int, tuple[ModelConfig, dict[PromptKey, str]]] | None
    items: int = 0  # sent or free (a prompt that fails unsent is counted by _count_context)
    calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    max_cost_usd: float = 0.0
    over_window: int = 0

    def tally(self) -> dict[str, float]:
        """The model's line of Estimate.per_model."""
        return {"calls": self.calls, "cached": self.cached, "max_cost_usd": self.max_cost_usd,
                "over_window": self.over_window}


def _priced(book: PromptBook, model: Model, repeats: set[int]) -> _Priced:
    """The model as the estimate prices it, nothing counted yet."""
    config = config_from_model(model)
    keys = None
    if not model.is_baseline:
        calls = {repeat: _call_identity(repeat_config(config, repeat)) for repeat in sorted(repeats)}
        keys = {repeat: (call, book.call_keys.setdefault(identity, {})) for repeat, (call, identity) in calls.items()}
    return _Priced(model.name, model.is_baseline, config, book.fitted(config), keys)


def _estimate_pairs(session: Session, pairs: list[Pair], models: dict[int, Model], options: RunOptions,
                    version: tuple) -> Estimate:
    estimate = Estimate(context_policy=options.context_policy, instances=len({key[0] for _, key, _ in pairs}),
                        by_condition=dict(Counter(key[1] for _, key, _ in pairs)))
    book = ESTIMATE_CACHE.book(session, version, [key for _, key, _ in pairs], options)
    used = {(model_id, repeat) for model_id, _, repeat in pairs}
    priced = {model_id: _priced(book, models[model_id], {r for m, r in used if m == model_id})
              for model_id in dict.fromkeys([model_id for model_id, _, _ in pairs])}  # per_model in order of the pairs
    items = [(priced[model_id], key, repeat) for model_id, key, repeat in pairs]
    prompts = [model.prompts.get(key) or book.item(model.config, key) for model, key, _ in items]
    for (model, _, _), prompt in zip(items, prompts, strict=True):
        if prompt.over_window or prompt.error is not None:
            _count_context(estimate, model, prompt)
    sendable = [(model, prompt.tokens, _call_key(model, key, repeat, prompt))
                for (model, key, repeat), prompt in zip(items, prompts, strict=True) if prompt.error is None]
    _add_to_estimate(estimate, sendable, _cached_keys(session, [call for *_, call in sendable if call]))
    for model in priced.values():
        estimate.items += model.items
        estimate.calls += model.calls
        estimate.cached += model.cached
        estimate.input_tokens += model.input_tokens
        estimate.max_output_tokens += model.calls * model.config.max_output_tokens
        estimate.per_model[model.name] = model.tally()
    return estimate


def _call_key(model: _Priced, key: PromptKey, repeat: int, prompt: ItemPrompt) -> str | None:
    """The cache key of the item's call (None for a baseline, which calls nothing), hashed once per book."""
    if model.keys is None:
        return None
    config, keys = model.keys[repeat]
    call = keys.get(key)
    if call is None:
        call = keys[key] = cache_key(config, prompt.messages)
    return call


def _call_identity(config: ModelConfig) -> tuple[ModelConfig, str]:
    """The config and what of its calls' cache keys is not the messages, with what picks the fitted prompt."""
    request = canonical_request(config, [])
    return config, json.dumps([request, config.context_window, config.max_output_tokens], sort_keys=True)


def _cached_keys(session: Session, keys: list[str]) -> set[str]:
    """The keys among `keys` that the call cache holds, looked up in chunks (not one query per call), each chunk's
    SELECT sent as the driver's own statement: SQLAlchemy would render and process a bound parameter per key (2.7x
    the CPU of the lookup)."""
    unique, found = list(dict.fromkeys(keys)), set[str]()
    connection = session.connection()
    for start in range(0, len(unique), PROMPT_CHUNK):
        chunk = tuple(unique[start : start + PROMPT_CHUNK])
        found.update(key for (key,) in connection.exec_driver_sql(_key_lookup(connection, len(chunk)), chunk))
    return found


DRIVER_MARKS = {"qmark": "?", "format": "%s", "pyformat": "%s"}  # a positional parameter, per DB-API paramstyle


def _key_lookup(connection: Connection, size: int) -> str:
    """SELECT key FROM llmcall WHERE key IN (`size` positional parameters), quoted for the connection's dialect
    (SQLite's qmark, psycopg's format)."""
    quote, mark = connection.dialect.identifier_preparer.quote, DRIVER_MARKS[connection.dialect.paramstyle]
    return (f"SELECT {quote('key')} FROM {quote(str(LLMCall.__tablename__))} "
            f"WHERE {quote('key')} IN ({', '.join([mark] * size)})")


def _count_context(estimate: Estimate, model: _Priced, prompt: ItemPrompt) -> None:
    """Count a prompt over its model's context window: truncated to fit, or failing unsent (an item, no call)."""
    estimate.over_window += prompt.over_window
    estimate.truncated += prompt.truncated
    estimate.refused += prompt.error is not None
    model.over_window += prompt.over_window
    if prompt.error is not None:
        estimate.items += 1


def _add_to_estimate(estimate: Estimate, sendable: list[tuple[_Priced, int, str | None]], cached: set[str]) -> None:
    """Count the items sent: a baseline's or a cached call is free; a paid call costs its input tokens and its
    model's maximum output tokens at the model's prices, the costs summed in item order (overall and per model);
    the counts are the models', added up by _estimate_pairs."""
    for model, tokens_in, call in sendable:
        model.items += 1
        if model.baseline:
            continue
        if call in cached:
            model.cached += 1
            continue
        config = model.config
        cost = config.cost_usd(tokens_in, config.max_output_tokens)
        estimate.max_cost_usd += cost
        model.max_cost_usd += cost
        model.calls += 1
        model.input_tokens += tokens_in
