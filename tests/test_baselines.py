"""Baselines: always-refuse refuses; extractive cites [doc N] best-overlap sentences or refuses when nothing fits."""

from __future__ import annotations

import asyncio

import pytest

from core.generation.baselines import REFUSAL_TEXT, always_refuse, extractive, split_prompt
from core.generation.providers import get_provider
from core.generation.providers.base import ModelConfig, ProviderError
from core.protocols.enterprise_rag.prompt import build_messages
from core.store.models import Document, Instance


def prompt(query: str, texts: list[str]) -> str:
    documents = [Document(instance_id=1, position=i, doc_uid=f"d{i}", title=f"T{i}", text=t, role="noise")
                 for i, t in enumerate(texts)]
    messages, _ = build_messages(Instance(uid="u", domain_id=1, query=query, mode="noisy"), [], documents)
    return messages[1].content


DOCS = [
    "The cafeteria serves soup on Mondays. Parking is assigned by seniority.",
    "Safety first. The turbine main bearing maintenance interval is 6000 operating hours.",
    "The grid code requires quarterly substation inspections.",
]


@pytest.mark.parametrize(
    ("query", "expected_lines"),
    [
        pytest.param("What is the maintenance interval of the turbine main bearing?",
                     ["- The turbine main bearing maintenance interval is 6000 operating hours. [doc 2]"],
                     id="single-best-sentence"),
        pytest.param("How often are substation inspections under the grid code?",
                     ["- The grid code requires quarterly substation inspections. [doc 3]"], id="third-doc"),
    ],
)
def test_extractive_cites_the_best_sentences(query, expected_lines):
    assert extractive(prompt(query, DOCS)).splitlines() == expected_lines


@pytest.mark.parametrize(
    "query",
    [pytest.param("Who won the 1998 football championship?", id="unrelated"),
     pytest.param("What is the?", id="only-stopwords")],
)
def test_extractive_refuses_when_nothing_matches(query):
    assert extractive(prompt(query, DOCS)) == REFUSAL_TEXT


def test_always_refuse_is_a_gap_refusal():
    assert always_refuse(prompt("anything", DOCS)) == REFUSAL_TEXT
    assert "cannot" in REFUSAL_TEXT and "provided documents" in REFUSAL_TEXT


def test_prompt_round_trip():
    docs, query = split_prompt(prompt("Where?", DOCS))
    assert [n for n, _ in docs] == [1, 2, 3] and docs[2][1] == DOCS[2] and query == "Where?"


@pytest.mark.parametrize(
    ("model_name", "check"),
    [
        pytest.param("baseline:always-refuse", lambda text: text == REFUSAL_TEXT, id="always-refuse"),
        pytest.param("baseline:extractive", lambda text: "[doc 2]" in text, id="extractive"),
    ],
)
def test_baseline_provider_needs_no_network(model_name, check):
    from core.generation.providers.base import ChatMessage

    provider = get_provider(ModelConfig(name=model_name, provider="baseline", model_name=model_name))
    user = prompt("What is the maintenance interval of the turbine main bearing?", DOCS)
    completion = asyncio.run(provider.complete([ChatMessage(role="user", content=user)]))
    assert check(completion.text) and completion.cost_usd == 0 and completion.input_tokens > 0


def test_unknown_baseline():
    with pytest.raises(ProviderError, match="known: baseline:always-refuse"):
        get_provider(ModelConfig(name="x", provider="baseline", model_name="baseline:oracle"))
