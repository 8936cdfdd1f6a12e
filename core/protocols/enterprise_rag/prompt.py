"""The EnterpriseRAG prompt: system = its numbered constraints (and the source-policy line of the condition, if any),
user = the numbered documents and the query."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core.protocols.base import Condition, Prompt
from core.protocols.messages import ChatMessage
from core.protocols.prompting import (
    SOURCE_POLICIES,
    InstanceView,
    bundle_meta,
    constraint_meta,
    order_documents,
    system_prompt,
    user_prompt,
)

if TYPE_CHECKING:  # type hints only: importing the protocols (the CLI's help) must not load the ORM
    from core.store.models import Constraint, Document, Instance


def enterprise_messages(constraints: Sequence[Any], documents: Sequence[Any], query: str,
                        policy: str | None = None) -> list[ChatMessage]:
    """System = numbered constraints (and the source-policy line, if any), user = numbered documents + query."""
    system = system_prompt(constraints) + (f"\n\n{SOURCE_POLICIES[policy]}" if policy else "")
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user_prompt(documents, query))]


def build_messages(
    instance: Instance,
    constraints: Sequence[Constraint],
    documents: Sequence[Document],
    *,
    order: str = "stored",
    seed: int = 0,
) -> tuple[list[ChatMessage], dict[str, Any]]:
    """(messages, prompt_meta) of the EnterpriseRAG prompt: system = numbered constraints, user = numbered documents
    + query; order recorded."""
    ordered = order_documents(documents, order, seed)
    meta = {"order": order, "seed": seed, **bundle_meta(ordered), **constraint_meta(constraints)}
    return enterprise_messages(constraints, ordered, instance.query), meta


def enterprise_prompt(instance: InstanceView, documents: Sequence[Any], condition: Condition) -> Prompt:
    """The EnterpriseRAG prompt (build_messages, byte for byte, under the default condition)."""
    messages = enterprise_messages(instance.constraints, documents, instance.query, condition.settings.get("policy"))
    return messages, constraint_meta(instance.constraints)
