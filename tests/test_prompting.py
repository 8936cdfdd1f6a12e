"""Prompt assembly: numbered constraints as the system prompt, numbered documents and the query, document orders."""

from __future__ import annotations

import pytest

from core.protocols.enterprise_rag.prompt import build_messages
from core.store.models import Constraint, Document, Instance


def docs(roles: list[str]) -> list[Document]:
    return [Document(instance_id=1, position=i, doc_uid=f"d{i}", title=f"Title {i}", text=f"Body {i}.", role=role)
            for i, role in enumerate(roles)]


INSTANCE = Instance(id=1, uid="u1", domain_id=1, query="What is the interval?", mode="noisy")
CONSTRAINTS = [Constraint(instance_id=1, position=p, cid=f"c{p}", text=t, category="output", sub_dimension="format",
                          judge_method="rule", checker_id="x")
               for p, t in [(2, "Third rule."), (0, "First rule."), (1, "Second rule.")]]
ROLES = ["noise", "supporting", "noise", "conflicting", "noise"]


def test_system_is_numbered_constraints_and_user_has_documents_then_query():
    messages, meta = build_messages(INSTANCE, CONSTRAINTS, docs(ROLES))
    system, user = messages
    assert system.role == "system" and "1. First rule.\n2. Second rule.\n3. Third rule." in system.content
    assert user.content.index("[doc 1] Title 0\nBody 0.") < user.content.index("[doc 5] Title 4")
    assert user.content.rstrip().endswith("Question: What is the interval?")
    assert meta["constraint_ids"] == ["c0", "c1", "c2"]


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        pytest.param("stored", ["d0", "d1", "d2", "d3", "d4"], id="stored"),
        pytest.param("support_first", ["d1", "d3", "d0", "d2", "d4"], id="support-first"),
        pytest.param("support_last", ["d0", "d2", "d4", "d1", "d3"], id="support-last"),
        pytest.param("support_middle", ["d0", "d1", "d3", "d2", "d4"], id="support-middle"),
    ],
)
def test_document_orders_are_recorded(order, expected):
    messages, meta = build_messages(INSTANCE, CONSTRAINTS, docs(ROLES), order=order)
    assert meta["doc_order"] == expected and meta["order"] == order
    positions = [messages[1].content.index(f"Title {uid[1]}") for uid in expected]
    assert positions == sorted(positions)


def test_shuffle_is_seeded():
    orders = {tuple(build_messages(INSTANCE, CONSTRAINTS, docs(ROLES), order="shuffle", seed=s)[1]["doc_order"])
              for s in (1, 1, 2, 3, 4)}
    assert 2 <= len(orders) <= 4
    assert build_messages(INSTANCE, CONSTRAINTS, docs(ROLES), order="shuffle", seed=5)[1]["doc_order"] == \
        build_messages(INSTANCE, CONSTRAINTS, docs(ROLES), order="shuffle", seed=5)[1]["doc_order"]


def test_unknown_order_lists_known():
    with pytest.raises(ValueError, match="known: stored, shuffle"):
        build_messages(INSTANCE, CONSTRAINTS, docs(ROLES), order="random")
