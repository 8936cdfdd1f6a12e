"""The prompts of a run's items: each (instance, condition) built by its protocol from chunked column queries,
then fitted to each model's context window (refuse or truncate)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from sqlmodel import Session, col

from core.generation.providers.base import ChatMessage, ModelConfig
from core.generation.tokens import count_tokens
from core.protocols import Protocol, get_protocol
from core.protocols.prompting import InstanceView, fit_documents
from core.store.db import select_columns
from core.store.models import Constraint, Document, Instance

PROMPT_CHUNK = 500
PromptKey = tuple[int, str]  # (instance id, condition)


@dataclass
class PromptPlan:
    """The prompt of one (instance, condition) before any context-window check, with what it was built from."""

    protocol: Protocol
    instance: InstanceView
    condition: str
    documents: list[Any]  # the bundle after the condition, in prompt order
    bundle_meta: dict[str, Any]
    messages: list[ChatMessage]
    meta: dict[str, Any]

    @cached_property
    def tokens(self) -> int:
        """The prompt's estimated input tokens (counted once)."""
        return prompt_tokens(self.messages)

    def render(self, documents: list[Any]) -> tuple[list[ChatMessage], dict[str, Any]]:
        """The same prompt over a subset of its documents."""
        return self.protocol.render_prompt(self.instance, documents, self.condition, self.bundle_meta)


@dataclass
class ItemPrompt:
    """What one (model, instance, condition) item sends after the context-window check, or why it sends nothing."""

    messages: list[ChatMessage]
    meta: dict[str, Any]
    error: str | None = None
    over_window: bool = False

    @cached_property
    def tokens(self) -> int:
        """The prompt's estimated input tokens (counted once)."""
        return prompt_tokens(self.messages)

    @property
    def truncated(self) -> bool:
        """Documents were dropped to fit the context window."""
        return self.over_window and self.error is None


def prompt_tokens(messages: list[ChatMessage]) -> int:
    """Estimated input tokens of a prompt (core.generation.tokens), as the context-window check counts them."""
    return sum(count_tokens(m.content) for m in messages)


def load_prompt_plans(session: Session, keys: list[PromptKey], order: str, seed: int) -> dict[PromptKey, PromptPlan]:
    """The prompt of every (instance, condition), built by the instance's protocol from a few chunked column queries
    (no ORM objects)."""
    plans: dict[PromptKey, PromptPlan] = {}
    conditions: dict[int, list[str]] = defaultdict(list)
    for instance_id, condition in dict.fromkeys(keys):
        conditions[instance_id].append(condition)
    unique = sorted(conditions)
    for start in range(0, len(unique), PROMPT_CHUNK):
        chunk = unique[start : start + PROMPT_CHUNK]
        instances = session.exec(select_columns(Instance.id, Instance.query, Instance.protocol, Instance.mode,
                                        Instance.language, Instance.reference, Instance.attributes)
                                 .where(col(Instance.id).in_(chunk))).all()
        constraints: dict[int, list[Any]] = defaultdict(list)
        for c in session.exec(select_columns(Constraint.instance_id, Constraint.position, Constraint.text, Constraint.cid,
                                             Constraint.checker_id)
                              .where(col(Constraint.instance_id).in_(chunk))):
            constraints[c.instance_id].append(c)
        documents: dict[int, list[Any]] = defaultdict(list)
        for d in session.exec(select_columns(Document.instance_id, Document.position, Document.title, Document.text,
                                     Document.role, Document.doc_uid, Document.content_type, Document.variant)
                              .where(col(Document.instance_id).in_(chunk))):
            documents[d.instance_id].append(d)
        for row in instances:
            protocol = get_protocol(row.protocol)
            view = InstanceView(query=row.query, id=row.id, protocol=row.protocol, mode=row.mode,
                                language=row.language, constraints=tuple(constraints[row.id]),
                                reference=row.reference, attributes=row.attributes or {})
            for condition in conditions[row.id]:
                bundle, bundle_meta = protocol.bundle(documents[row.id], condition, order, seed)
                messages, meta = protocol.render_prompt(view, bundle, condition, bundle_meta)
                plans[(row.id, condition)] = PromptPlan(protocol, view, condition, bundle, bundle_meta, messages, meta)
    return plans


def load_prompts(session: Session, instance_ids: list[int], order: str, seed: int,
                 condition: str = "") -> dict[int, tuple[list, dict]]:
    """Messages and prompt_meta for many instances under one condition (the protocol's default by default)."""
    plans = load_prompt_plans(session, [(i, condition) for i in instance_ids], order, seed)
    return {instance_id: (plan.messages, plan.meta) for (instance_id, _), plan in plans.items()}


def instance_prompt(session: Session, instance_id: int, order: str, seed: int,
                    condition: str = "") -> tuple[list[ChatMessage], dict]:
    """Messages and prompt_meta for one instance."""
    return load_prompts(session, [instance_id], order, seed, condition)[instance_id]


def context_error(tokens: int, config: ModelConfig) -> str:
    """Why a prompt is not sent: it does not fit the model's context window with its output reserved."""
    reserve = f" ({config.max_output_tokens} reserved for the output)" if config.max_output_tokens else ""
    return (f"prompt of {tokens} tokens exceeds the context window of {config.context_window} tokens of "
            f"{config.name}{reserve}")


def fit_context(plan: PromptPlan, config: ModelConfig, policy: str) -> ItemPrompt:
    """The prompt `config` gets: unchanged when it fits the context window (prompt + max output tokens) or the
    model declares none; over it, 'refuse' fails the item unsent, 'truncate' drops whole documents from the end of
    the bundle (the last, lowest-priority ones first) until it fits, recording what was dropped in prompt_meta."""
    window = config.context_window
    if not window:
        return ItemPrompt(plan.messages, plan.meta)
    limit = window - config.max_output_tokens
    if plan.tokens <= limit:
        return ItemPrompt(plan.messages, plan.meta)
    context = {"policy": policy, "window": window, "tokens_before": plan.tokens}
    if policy == "truncate":
        fitted = fit_documents(plan.documents, plan.render, lambda prompt: prompt_tokens(prompt[0]), limit)
        if fitted is not None:
            kept, (messages, meta), tokens = fitted
            dropped = [d.doc_uid for d in plan.documents[kept:]]
            return ItemPrompt(messages, {**meta, "context": {**context, "tokens": tokens, "dropped": dropped}},
                              over_window=True)
    error = context_error(plan.tokens, config)
    if policy == "truncate":
        error += "; it does not fit even with only its first document"
    return ItemPrompt(plan.messages, {**plan.meta, "context": context}, error=error, over_window=True)


class PromptBook:
    """Every item's prompt: the (instance, condition) plans and each context window's fitted version, memoised."""

    def __init__(self, plans: dict[PromptKey, PromptPlan], policy: str) -> None:
        self.plans = plans
        self.policy = policy
        self._fitted: dict[tuple[int | None, int], dict[PromptKey, ItemPrompt]] = {}  # per (window, max output)
        self.call_keys: dict[str, dict[PromptKey, str]] = {}  # call identity -> key -> the call's cache key

    def load(self, session: Session, keys: list[PromptKey], order: str, seed: int) -> None:
        """Build the plans of the keys the book lacks (a book reused across estimates builds each prompt once)."""
        missing = [key for key in dict.fromkeys(keys) if key not in self.plans]
        if missing:
            self.plans.update(load_prompt_plans(session, missing, order, seed))

    def item(self, config: ModelConfig, key: PromptKey) -> ItemPrompt:
        """The prompt `config` sends for `key` under the book's context policy."""
        fitted = self.fitted(config)
        if key not in fitted:
            fitted[key] = fit_context(self.plans[key], config, self.policy)
        return fitted[key]

    def fitted(self, config: ModelConfig) -> dict[PromptKey, ItemPrompt]:
        """The prompts fitted so far to `config`'s context window and output reserve (shared by every model with the
        same two numbers), by key."""
        return self._fitted.setdefault((config.context_window, config.max_output_tokens), {})
