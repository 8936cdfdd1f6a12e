"""Prompt assembly: the instance's constraints as the system instruction set, numbered documents then the query."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Literal

from core.store.models import Constraint, Document, Instance
from core.generation.providers.base import ChatMessage

DocumentOrder = Literal["stored", "shuffle", "support_first", "support_middle", "support_last"]
ORDERS: tuple[str, ...] = ("stored", "shuffle", "support_first", "support_middle", "support_last")
SUPPORT_ROLES = ("supporting", "partial", "conflicting")
QUESTION_MARKER = "Question:"
DOCUMENTS_HEADER = "Documents:"


def system_prompt(constraints: Sequence[Constraint]) -> str:
    """The constraints, by position, as a numbered instruction set."""
    ordered = sorted(constraints, key=lambda c: c.position)
    lines = [f"{i}. {c.text.strip()}" for i, c in enumerate(ordered, start=1)]
    header = "Follow every instruction below when answering from the documents provided by the user."
    return header + "\n\n" + "\n".join(lines)


def order_documents(documents: Sequence[Document], order: str, seed: int = 0) -> list[Document]:
    """Documents in the requested order; 'support_*' places supporting/partial/conflicting ones as a block."""
    if order not in ORDERS:
        raise ValueError(f"unknown document order {order!r}; known: {', '.join(ORDERS)}")
    stored = sorted(documents, key=lambda d: d.position)
    if order == "stored":
        return stored
    if order == "shuffle":
        shuffled = list(stored)
        random.Random(seed).shuffle(shuffled)
        return shuffled
    support = [d for d in stored if d.role in SUPPORT_ROLES]
    others = [d for d in stored if d.role not in SUPPORT_ROLES]
    if order == "support_first":
        return support + others
    if order == "support_last":
        return others + support
    middle = len(others) // 2
    return others[:middle] + support + others[middle:]


def user_prompt(documents: Sequence[Document], query: str) -> str:
    """Documents numbered [doc 1]..[doc N] with titles, then the query."""
    blocks = [f"[doc {i}] {d.title.strip()}\n{d.text.strip()}" for i, d in enumerate(documents, start=1)]
    return f"{DOCUMENTS_HEADER}\n\n" + "\n\n".join(blocks) + f"\n\n{QUESTION_MARKER} {query.strip()}"


def build_messages(
    instance: Instance,
    constraints: Sequence[Constraint],
    documents: Sequence[Document],
    *,
    order: str = "stored",
    seed: int = 0,
) -> tuple[list[ChatMessage], dict[str, Any]]:
    """(messages, prompt_meta): system = numbered constraints, user = numbered documents + query; order recorded."""
    ordered = order_documents(documents, order, seed)
    messages = [
        ChatMessage(role="system", content=system_prompt(constraints)),
        ChatMessage(role="user", content=user_prompt(ordered, instance.query)),
    ]
    meta = {
        "order": order,
        "seed": seed,
        "doc_order": [d.doc_uid for d in ordered],
        "doc_roles": [d.role for d in ordered],
        "constraint_ids": [c.cid for c in sorted(constraints, key=lambda c: c.position)],
    }
    return messages, meta
