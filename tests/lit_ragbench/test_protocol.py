"""The lit_ragbench protocol: aspects and categories, the seeded per-instance shuffle recorded in prompt_meta, tables
passed in their own format, the answering prompt in the question's language, and its conditions."""

from __future__ import annotations

from collections import Counter
from functools import cache

import pytest

from core.ingest.importers import get_importer
from core.protocols import get_protocol
from core.protocols.lit_ragbench import (
    ABSTENTION,
    ASPECTS,
    CATEGORIES,
    MAIN_CATEGORIES,
    SYSTEM_PROMPTS,
    as_lit_ragbench,
    categories_of,
)
from core.protocols.prompting import DocumentView, InstanceView, check_condition_settings
from core.store.schema import InstanceSpec
from tests.lit_ragbench.conftest import lit_file

LIT = get_protocol("lit_ragbench")


@cache
def specs(language: str) -> tuple[InstanceSpec, ...]:
    parsed = get_importer("lit-ragbench").parse(lit_file(f"{language}.jsonl"))
    return tuple(as_lit_ragbench(spec) for _, spec in parsed.instances)


def view(spec: InstanceSpec) -> tuple[InstanceView, list[DocumentView]]:
    docs = [DocumentView(doc_uid=d.doc_id, position=i, title=d.title, text=d.text, role=d.role,
                         content_type=d.content_type) for i, d in enumerate(spec.documents)]
    return InstanceView(query=spec.query, protocol=spec.protocol, language=spec.language,
                        reference=spec.reference.model_dump(), attributes=spec.attributes.model_dump()), docs


def first(language: str, aspect: str) -> InstanceSpec:
    return next(s for s in specs(language) if aspect in s.attributes.aspects)


def test_categories_and_aspects_follow_the_paper() -> None:
    assert CATEGORIES == ("Integration", "Reasoning", "Logic", "Table", "Abstention")
    assert CATEGORIES[:4] == MAIN_CATEGORIES
    by_category = Counter(a.category for a in ASPECTS.values())
    assert by_category == {"Integration": 1, "Reasoning": 2, "Logic": 3, "Table": 4, "Abstention": 3}
    assert categories_of(["T_csv", "R_calculate", "T_csv"]) == ["Reasoning", "Table"]


@pytest.mark.parametrize("language", ["en", "ja"])
def test_every_question_has_known_aspects_and_abstention_stands_alone(language) -> None:
    for spec in specs(language):
        assert spec.attributes.aspects and set(spec.attributes.aspects) <= set(ASPECTS)
        cats = spec.attributes.categories
        assert len(cats) == len(spec.attributes.aspects)  # two aspects always come from two categories
        assert (ABSTENTION in cats) == (cats == [ABSTENTION]) == (spec.reference.answer_type == "unanswerable")
        assert not get_protocol("lit_ragbench").errors(spec)


@pytest.mark.parametrize("language", ["en", "ja"])
def test_default_prompt_mixes_every_chunk_in_a_seeded_per_instance_order(language) -> None:
    orders = []
    for spec in specs(language)[:40]:
        instance, docs = view(spec)
        messages, meta = LIT.prompt(instance, docs)
        again, _ = LIT.prompt(instance, docs, "", order="support_first", seed=99)  # the run's order/seed do not apply
        assert [m.content for m in messages] == [m.content for m in again]
        assert sorted(meta["doc_order"]) == sorted(d.doc_uid for d in docs)
        assert (meta["order"], meta["seed"]) == ("shuffle", 0) and isinstance(meta["bundle_seed"], int)
        positions = tuple(i for i, role in enumerate(meta["doc_roles"]) if role == "supporting")
        orders.append((len(docs), positions))
    same_size = [positions for size, positions in orders if size == Counter(s for s, _ in orders).most_common(1)[0][0]]
    assert len(set(same_size)) > 1, "instances with as many chunks must not all put their positives at one place"
    assert any(order != tuple(range(len(order))) for _, order in orders)


def test_reshuffled_changes_only_the_order() -> None:
    instance, docs = view(first("en", "I_multiple"))
    (_, default_meta), (_, other_meta) = LIT.prompt(instance, docs), LIT.prompt(instance, docs, "reshuffled")
    assert default_meta["doc_order"] != other_meta["doc_order"]
    assert sorted(default_meta["doc_order"]) == sorted(other_meta["doc_order"]) and other_meta["seed"] == 1


@pytest.mark.parametrize(
    ("aspect", "content_type", "marker"),
    [
        pytest.param("T_html_cell_merged", "html", "rowspan", id="html-merged"),
        pytest.param("T_html", "html", "<table", id="html"),
        pytest.param("T_markdown", "markdown_table", "|", id="markdown"),
        pytest.param("T_csv", "csv", ",", id="csv"),
    ],
)
def test_tables_are_passed_in_their_own_format(aspect, content_type, marker) -> None:
    spec = next(s for s in specs("ja") if aspect in s.attributes.aspects
                and any(d.content_type == content_type and marker in d.text for d in s.documents))
    instance, docs = view(spec)
    messages, _ = LIT.prompt(instance, docs)
    table = next(d for d in docs if d.content_type == content_type and marker in d.text)
    assert table.text.strip() in messages[1].content


def test_html_as_text_keeps_the_order_and_converts_the_tables() -> None:
    spec = next(s for s in specs("en") if "T_html_cell_merged" in s.attributes.aspects)
    instance, docs = view(spec)
    (_, default_meta), (messages, meta) = LIT.prompt(instance, docs), LIT.prompt(instance, docs, "html_as_text")
    assert meta["doc_order"] == default_meta["doc_order"] and meta["html_as_text"]
    assert "<table" not in messages[1].content and "| ---" in messages[1].content


@pytest.mark.parametrize("language", ["en", "ja"])
def test_answering_prompt_is_in_the_question_language_and_never_reveals_abstention(language) -> None:
    prompts = set()
    for aspect in ("A_negative_only", "A_conflicted", "R_calculate", "T_csv"):
        instance, docs = view(first(language, aspect))
        messages, meta = LIT.prompt(instance, docs)
        assert [m.role for m in messages] == ["system", "user"] and meta["prompt_language"] == language
        assert messages[1].content.endswith(f"Question: {instance.query.strip()}")
        prompts.add(messages[0].content)
    assert prompts == {SYSTEM_PROMPTS[language]}


@pytest.mark.parametrize("seed", [-1, "1", True, 1.0], ids=["negative", "string", "bool", "float"])
def test_a_bad_condition_seed_is_refused(seed) -> None:
    with pytest.raises(ValueError, match="seed"):
        check_condition_settings({"order": "shuffle", "seed": seed})


def test_unknown_condition_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match=r"known: \(default\), reshuffled, html_as_text"):
        LIT.condition("closed_book")
