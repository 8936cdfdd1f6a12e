"""Atomic libraries and constraint fusion: conflict table, trigger filtering, sampling, LLM hooks."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from conftest import REPO

from core.construction.fusion import (
    CONFLICT_TABLE,
    conflict_reason,
    fuse,
    llm_conflict_check,
    remove_conflicts,
    sample_atomics,
)
from core.construction.library import (
    Atomic,
    checker_errors,
    domain_library_paths,
    load_libraries,
)
from core.store.schema import SUB_DIMENSIONS_BY_CATEGORY

DOMAINS = ["energy", "medical", "legal", "financial", "party_building", "web_search"]
ALL_FEATURES = {"statutes", "tables", "multi_source", "numbers", "dates"}


def rule(aid, checker_id, kwargs=None, sub="format", tags=(), precondition=None):
    return Atomic(id=aid, sub_dimension=sub, instruction=aid, probability=0.5, generalization=True,
                  judge_method="rule", checker_id=checker_id, kwargs=kwargs or {}, tags=tuple(tags),
                  precondition=precondition)


def llm(aid, sub="style", tags=(), excludes=(), requires=()):
    return Atomic(id=aid, sub_dimension=sub, instruction=aid, probability=0.5, generalization=True,
                  judge_method="llm", criterion="c", tags=tuple(tags), excludes=tuple(excludes),
                  requires=tuple(requires))


JSON = rule("json", "enterprise:json_object", {"required_keys": ["answer"]}, tags=["fmt_json"])
TABLE = rule("table", "enterprise:markdown_table", {"min_rows": 2}, tags=["fmt_table"])
NUMBERED = rule("numbered", "enterprise:numbered_list", {"min_items": 3}, tags=["fmt_list", "fmt_numbered"])
SECTIONS3 = rule("sections", "enterprise:section_count", {"min_sections": 3}, tags=["fmt_sections", "needs_length"])
WORDS100 = rule("words100", "enterprise:word_count_range", {"max_words": 100}, sub="content", tags=["length"])
WORDS_MED = rule("words_med", "enterprise:word_count_range", {"min_words": 120, "max_words": 350}, sub="content",
                 tags=["length"])
CHARS600 = rule("chars600", "enterprise:char_count_range", {"max_chars": 600}, sub="content", tags=["length_x"])
NO_FIRST = rule("no_i", "keywords:forbidden_words", {"forbidden_words": ["I", "my"]}, sub="role")
GAP_PHRASE = rule("gap_i", "enterprise:required_phrase", {"phrase": "I cannot directly answer."},
                  sub="knowledge_gap", precondition="gap")
GAP_PHRASE2 = rule("gap_other", "enterprise:required_phrase", {"phrase": "Data unavailable"},
                   sub="knowledge_gap", precondition="gap")
CONFLICT_PHRASE = rule("con_p", "enterprise:required_phrase", {"phrase": "Conflicting information"},
                       sub="conflict_handling", precondition="conflict")
NO_COMMA = rule("no_comma", "punctuation:no_comma", sub="style")
START_COMMA = rule("start", "enterprise:starts_with", {"prefix": "Summary, in short:"}, sub="content",
                   tags=["starts_with"])
PLAIN = llm("plain", sub="audience", tags=["plain"])
EXPERT = llm("expert", sub="audience", tags=["expert"], excludes=["plain"])
FORMAL = llm("formal", tags=["style_formal"])


@pytest.mark.parametrize(
    "name, a, b, fragment",
    [
        ("json vs table", JSON, TABLE, "layouts"),
        ("json vs numbered list", JSON, NUMBERED, "layouts"),
        ("table vs numbered list", TABLE, NUMBERED, "layouts"),
        ("json vs sections", JSON, SECTIONS3, "headed sections"),
        ("word limit vs sections", WORDS100, SECTIONS3, "sections do not fit"),
        ("min words vs max chars", WORDS_MED, CHARS600, "do not fit in 600 characters"),
        ("two word ranges", WORDS100, WORDS_MED, "two enterprise:word_count_range"),
        ("required phrase uses forbidden word", NO_FIRST, GAP_PHRASE, "forbidden 'I'"),
        ("two fixed gap sentences", GAP_PHRASE, GAP_PHRASE2, "two fixed sentences"),
        ("no comma vs prefix with comma", NO_COMMA, START_COMMA, "forbidden ','"),
        ("declared exclusion", PLAIN, EXPERT, "mutually exclusive"),
    ],
)
def test_conflicting_pairs(name, a, b, fragment):
    assert fragment in (conflict_reason(a, b) or "")
    assert fragment in (conflict_reason(b, a) or "")


@pytest.mark.parametrize(
    "name, a, b",
    [
        ("numbered list and sections", NUMBERED, SECTIONS3),
        ("gap phrase and conflict phrase", GAP_PHRASE2, CONFLICT_PHRASE),
        ("formal and plain audience", FORMAL, PLAIN),
        ("medium words and sections", WORDS_MED, SECTIONS3),
    ],
)
def test_compatible_pairs(name, a, b):
    assert conflict_reason(a, b) is None


def test_conflict_table_is_symmetric_by_construction():
    assert all(len(pair) == 2 for pair in CONFLICT_TABLE)


def test_remove_conflicts_keeps_first_and_records_reason():
    kept, removed = remove_conflicts([NUMBERED, JSON, SECTIONS3, WORDS100, FORMAL])
    assert [a.id for a in kept] == ["numbered", "sections", "formal"]
    assert [r[0] for r in removed] == ["json", "words100"]
    assert "numbered" in removed[0][1] and "sections" in removed[1][1]


@pytest.fixture(scope="module")
def libraries() -> dict[str, list[Atomic]]:
    return {d: load_libraries(domain_library_paths(REPO / "data/libraries", d)) for d in DOMAINS}


@pytest.mark.parametrize("domain", DOMAINS)
def test_library_covers_every_sub_dimension(libraries, domain):
    counts = Counter(a.sub_dimension for a in libraries[domain])
    every = [s for subs in SUB_DIMENSIONS_BY_CATEGORY.values() for s in subs]
    assert {s: counts[s] for s in every if counts[s] < 5} == {}
    assert checker_errors(libraries[domain]) == []
    assert any(a.domain == domain for a in libraries[domain])


@pytest.mark.parametrize("seed", range(6))
def test_sampled_sets_are_conflict_free_and_near_target(libraries, seed):
    rng = random.Random(seed)
    chosen, _ = sample_atomics(libraries["legal"], 9, ALL_FEATURES, rng)
    assert len(chosen) == 9
    assert remove_conflicts(chosen)[1] == []
    assert {a.category for a in chosen} == {"persona", "output", "knowledge_protocol"}


def test_untriggerable_atomics_are_dropped(libraries):
    features = {"multi_source", "numbers", "dates"}  # no statutes in the bundle
    for seed in range(20):
        chosen, removed = sample_atomics(libraries["legal"], 10, features, random.Random(seed))
        assert not [a.id for a in chosen if "statutes" in a.requires]
    assert ("lg-cit-statute", "cannot be triggered: bundle lacks statutes") in removed


def test_fuse_is_deterministic_for_a_seed(libraries):
    runs = [fuse(libraries["medical"], "medical", ALL_FEATURES, random.Random(7)) for _ in range(2)]
    other = fuse(libraries["medical"], "medical", ALL_FEATURES, random.Random(8))
    assert runs[0].atomic_ids == runs[1].atomic_ids
    assert runs[0].atomic_ids != other.atomic_ids
    assert [c.id for c in runs[0].constraints] == [f"c{i + 1}" for i in range(len(runs[0].constraints))]


class FakeLLM:
    """Records prompts and answers each LLM step with a canned reply chosen by prompt wording."""

    def __init__(self):
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> dict:
        self.prompts.append(prompt)
        if "contradict each other" in prompt:
            return {"has_conflict": True, "reason": "drop the first", "keep": list(range(1, 30))}
        if "can never come into play" in prompt:
            return {"remove": [0], "reason": "not applicable"}
        if "Propose at most two" in prompt:
            return {"additional": [
                {"instruction": "Mention the effective date.", "sub_dimension": "content", "criterion": "date given"},
                {"instruction": "bad", "sub_dimension": "not-a-dimension", "criterion": "x"},
            ]}
        return {"logical_consistency": 5, "feasibility": 4, "realism": 4, "evaluation_clarity": 5,
                "complexity": 3, "remarks": "fine"}


def test_llm_steps_with_fake_provider(libraries):
    fake = FakeLLM()
    offline = fuse(libraries["energy"], "energy", ALL_FEATURES, random.Random(3))
    result = fuse(libraries["energy"], "energy", ALL_FEATURES, random.Random(3), query="q", context="ctx",
                  complete_json=fake, augment=True)
    assert result.atomic_ids == offline.atomic_ids[2:]  # conflict check dropped [0], filter dropped the next
    assert result.constraints[-1].text == "Mention the effective date."
    assert result.constraints[-1].judge_method == "llm"
    assert result.quality["average"] == pytest.approx(4.2)
    assert len(fake.prompts) == 4
    assert {r[1] for r in result.removed} >= {"removed by LLM review"}


def test_llm_conflict_check_ignores_malformed_reply():
    kept, _ = llm_conflict_check([JSON, TABLE], lambda prompt: {"has_conflict": True, "keep": "all"})
    assert kept == [JSON, TABLE]
