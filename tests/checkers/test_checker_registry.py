"""Registry, build_checker and kwargs_errors behaviour of core.scoring.checkers."""

from __future__ import annotations

import pytest

from core.registry import Registry, UnknownNameError
from core.scoring.checkers import CHECKERS, Checker, build_checker, kwargs_errors

IFEVAL_IDS = [
    "keywords:existence", "keywords:frequency", "keywords:forbidden_words", "keywords:letter_frequency",
    "language:response_language", "length_constraints:number_sentences", "length_constraints:number_paragraphs",
    "length_constraints:number_words", "length_constraints:nth_paragraph_first_word",
    "detectable_content:number_placeholders", "detectable_content:postscript",
    "detectable_format:number_bullet_lists", "detectable_format:constrained_response",
    "detectable_format:number_highlighted_sections", "detectable_format:multiple_sections",
    "detectable_format:json_format", "detectable_format:title", "combination:two_responses",
    "combination:repeat_prompt", "startend:end_checker", "startend:quotation",
    "change_case:capital_word_frequency", "change_case:english_capital", "change_case:english_lowercase",
    "punctuation:no_comma",
]  # fmt: skip
ENTERPRISE_KWARGS = {
    "enterprise:numbered_list": {},
    "enterprise:citation_count": {"pattern": "statute_article", "min_distinct": 2},
    "enterprise:required_phrase": {"phrase": "Data Unavailable"},
    "enterprise:forbidden_phrases": {"phrases": ["definitely", "must"]},
    "enterprise:no_emoji": {},
    "enterprise:markdown_table": {"min_rows": 2},
    "enterprise:json_object": {"required_keys": ["answer"]},
    "enterprise:word_count_range": {"min_words": 10, "max_words": None},
    "enterprise:char_count_range": {"max_chars": 500},
    "enterprise:paragraph_count_range": {"min_paragraphs": 1, "max_paragraphs": 3},
    "enterprise:section_count": {"min_sections": 2},
    "enterprise:starts_with": {"prefix": "Core conclusion:"},
    "enterprise:ends_with": {"suffix": "End of report."},
    "enterprise:keyword_frequency": {"keyword": "risk", "min_count": 1, "max_count": 3},
    "enterprise:response_language": {"language": "en"},
    "enterprise:ordered_list_items": {"order": "chronological"},
    "enterprise:bullet_list": {"min_items": 3},
}


@pytest.mark.parametrize("checker_id", IFEVAL_IDS + list(ENTERPRISE_KWARGS), ids=str)
def test_every_required_id_is_registered_with_its_own_id(checker_id):
    cls = CHECKERS.get(checker_id)
    assert issubclass(cls, Checker)
    assert cls.id == checker_id


def test_registry_holds_exactly_the_required_ids():
    assert set(CHECKERS.names()) == set(IFEVAL_IDS) | set(ENTERPRISE_KWARGS)


@pytest.mark.parametrize("checker_id, kwargs", list(ENTERPRISE_KWARGS.items()), ids=list(ENTERPRISE_KWARGS))
def test_enterprise_checkers_build_and_describe(checker_id, kwargs):
    checker = build_checker(checker_id, kwargs)
    assert kwargs_errors(checker_id, kwargs) == []
    assert checker.id == checker_id
    assert len(checker.describe()) > 15


@pytest.mark.parametrize(
    "checker_id, kwargs, expected",
    [
        ("detectable_format:number_bullet_lists", {}, [("checker_kwargs.num_bullets", "field required")]),
        ("enterprise:no_emoji", {"colour": "red"}, [("checker_kwargs.colour", "extra inputs are not permitted")]),
        ("enterprise:numbered_list", {"min_items": "many"}, [("checker_kwargs.min_items", "input should be a valid integer, unable to parse string as an integer")]),
        ("length_constraints:number_words", {"num_words": 5, "relation": "about"}, [("checker_kwargs.relation", "input should be 'less than' or 'at least'")]),
        ("enterprise:forbidden_phrases", {"phrases": ["ok", "  "]}, [("checker_kwargs.phrases", "value error, phrases must not be blank")]),
        ("enterprise:word_count_range", {"min_words": 9, "max_words": 3}, [("checker_kwargs", "value error, lower bound 9 exceeds upper bound 3")]),
        ("enterprise:word_count_range", {}, [("checker_kwargs", "value error, give a lower bound, an upper bound or both")]),
        ("enterprise:section_count", {"min_sections": 4, "max_sections": 2}, [("checker_kwargs", "value error, min_sections 4 exceeds max_sections 2")]),
        ("enterprise:keyword_frequency", {"keyword": "x", "min_count": 3, "max_count": 1}, [("checker_kwargs", "value error, min_count 3 exceeds max_count 1")]),
        ("enterprise:response_language", {"language": "English"}, [("checker_kwargs.language", "string should match pattern '^[a-z]{2}$'")]),
        ("enterprise:ordered_list_items", {"order": "random"}, [("checker_kwargs.order", "input should be 'alphabetical' or 'chronological'")]),
        ("enterprise:json_object", {"required_keys": "answer"}, [("checker_kwargs.required_keys", "input should be a valid list")]),
        ("keywords:existence", {"keywords": ["a"], "extra": None}, []),
        ("enterprise:markdown_table", None, []),
    ],
    ids=[
        "missing-field", "extra-field", "wrong-type", "bad-literal", "blank-phrase", "min-above-max",
        "no-bounds", "sections-min-above-max", "count-min-above-max", "language-not-iso", "unknown-order",
        "keys-not-list", "none-valued-keys-dropped", "kwargs-none-uses-defaults",
    ],
)  # fmt: skip
def test_kwargs_errors_give_field_paths(checker_id, kwargs, expected):
    assert kwargs_errors(checker_id, kwargs) == expected


@pytest.mark.parametrize(
    "pattern, valid",
    [("doc_ref", True), ("statute_article", True), (r"\(\d+\)", True), (r"([unclosed", False)],
    ids=["preset-doc-ref", "preset-statute", "user-regex", "broken-regex"],
)
def test_citation_pattern_must_be_preset_or_compile(pattern, valid):
    errors = kwargs_errors("enterprise:citation_count", {"pattern": pattern})
    assert (errors == []) is valid
    if not valid:
        assert errors[0][0] == "checker_kwargs.pattern" and "not a preset" in errors[0][1]


def test_unknown_checker_id_lists_known_ids():
    errors = kwargs_errors("x:y", {})
    assert errors[0][0] == "checker_id"
    assert errors[0][1].startswith("unknown checker 'x:y'; known: ")
    assert "enterprise:no_emoji" in errors[0][1] and "punctuation:no_comma" in errors[0][1]
    with pytest.raises(UnknownNameError, match="enterprise:bullet_list"):
        build_checker("x:y", {})


@pytest.mark.parametrize(
    "checker_id, kwargs, field",
    [("detectable_format:title", {"size": 3}, "checker_kwargs.size"), ("enterprise:starts_with", {}, "checker_kwargs.prefix")],
    ids=["extra", "missing"],
)
def test_build_checker_raises_value_error_naming_the_field(checker_id, kwargs, field):
    with pytest.raises(ValueError, match=field):
        build_checker(checker_id, kwargs)


@pytest.mark.parametrize("registry", [CHECKERS, Registry[type[Checker]]("checker")], ids=["shared", "fresh"])
def test_duplicate_registration_raises(registry):
    name = "enterprise:no_emoji"
    if name not in registry:
        registry.register(name)(Checker)
    with pytest.raises(ValueError, match="duplicate checker name"):
        registry.register(name)(Checker)
