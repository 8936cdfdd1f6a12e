"""Table-driven verdicts of the enterprise: checkers (strict), with edge cases."""

from __future__ import annotations

import pytest

from core.protocols.enterprise_rag.checkers import max_table_rows, paragraph_count, parse_json_object, section_count
from core.scoring.checkers import build_checker
from core.scoring.checkers.dates import first_date

TABLE = "| Region | Revenue |\n|:---|---:|\n| North | 10 |\n| South | 12 |"
EN = "The quarterly revenue grew in every region, according to the audited management report for the year."
ZH = "根据现有材料，我无法直接回答您的问题。请提供更多的信息，以便我们进行进一步的分析和判断。"
# (id, checker_id, kwargs, response, verdict)
CASES = [
    ("numbered-two", "enterprise:numbered_list", {}, "1. a\n2) b", True),
    ("numbered-one-below-default", "enterprise:numbered_list", {}, "1. a\nnot a list", False),
    ("numbered-needs-space", "enterprise:numbered_list", {"min_items": 2}, "1.a\n2.b", False),
    ("bullet-three", "enterprise:bullet_list", {"min_items": 3}, "- a\n* b\n+ c", True),
    ("bullet-bold-is-not-bullet", "enterprise:bullet_list", {}, "**Heading**\n---", False),
    ("cite-doc-distinct", "enterprise:citation_count", {"min_distinct": 2}, "See [doc 1] and [Doc 2].", True),
    ("cite-doc-same-doc-twice", "enterprise:citation_count", {"min_distinct": 2}, "See [doc 1] and [1].", False),
    ("cite-document-word", "enterprise:citation_count", {}, "As stated [Document 7].", True),
    ("cite-none", "enterprise:citation_count", {}, "No sources at all.", False),
    # doc_ref reads citations as the citation protocol does (ALCE's '[<digits>'): '[1, 2]' cites document 1
    ("cite-alce-list-form", "enterprise:citation_count", {}, "As stated [1, 2].", True),
    ("cite-alce-three-documents", "enterprise:citation_count", {"min_distinct": 3}, "So [1][2]. And [doc 3].", True),
    ("cite-statute-two-forms", "enterprise:citation_count", {"pattern": "statute_article", "min_distinct": 2}, "Under the Grid Safety Act, Article 12 and Section 4.2 of the Power Supply Regulation.", True),
    ("cite-statute-repeated", "enterprise:citation_count", {"pattern": "statute_article", "min_distinct": 2}, "Civil Code, Article 188 and again Civil Code,  article 188.", False),
    ("cite-user-regex", "enterprise:citation_count", {"pattern": r"\(ref-(\d+)\)", "min_distinct": 2}, "(ref-1) (ref-2) (ref-1)", True),
    ("phrase-present-other-case", "enterprise:required_phrase", {"phrase": "Data Unavailable"}, "Result: data  unavailable.", True),
    ("phrase-case-sensitive", "enterprise:required_phrase", {"phrase": "Data Unavailable", "case_sensitive": True}, "data unavailable", False),
    ("phrase-missing", "enterprise:required_phrase", {"phrase": "cannot answer"}, "Here is the answer.", False),
    ("forbidden-word-present", "enterprise:forbidden_phrases", {"phrases": ["must", "definitely"]}, "It will Definitely pass.", False),
    ("forbidden-substring-ok", "enterprise:forbidden_phrases", {"phrases": ["must"]}, "Mustard is yellow.", True),
    ("forbidden-multiword", "enterprise:forbidden_phrases", {"phrases": ["as an AI"]}, "As an\nAI model I think.", False),
    ("emoji-none", "enterprise:no_emoji", {}, "Plain text — with dashes, “quotes” and ünïcödé.", True),
    ("emoji-face", "enterprise:no_emoji", {}, "Great job 😀", False),
    ("emoji-check-mark", "enterprise:no_emoji", {}, "✅ done", False),
    ("emoji-flag", "enterprise:no_emoji", {}, "From \U0001f1e9\U0001f1ea", False),
    ("table-two-rows", "enterprise:markdown_table", {"min_rows": 2}, TABLE, True),
    ("table-three-rows-needed", "enterprise:markdown_table", {"min_rows": 3}, TABLE, False),
    ("table-no-delimiter", "enterprise:markdown_table", {}, "| a | b |\n| 1 | 2 |", False),
    ("table-width-mismatch", "enterprise:markdown_table", {}, "| a | b |\n|---|\n| 1 | 2 |", False),
    ("json-object-keys", "enterprise:json_object", {"required_keys": ["answer", "sources"]}, '{"answer": "x", "sources": []}', True),
    ("json-fenced", "enterprise:json_object", {"required_keys": ["answer"]}, '```json\n{"answer": 1}\n```', True),
    ("json-missing-key", "enterprise:json_object", {"required_keys": ["sources"]}, '{"answer": 1}', False),
    ("json-array-not-object", "enterprise:json_object", {}, "[1, 2]", False),
    ("json-with-prose", "enterprise:json_object", {}, 'Here: {"a": 1}', False),
    ("words-in-range", "enterprise:word_count_range", {"min_words": 3, "max_words": 3}, "one two three", True),
    ("words-over-max", "enterprise:word_count_range", {"max_words": 2}, "one two three", False),
    ("chars-boundary", "enterprise:char_count_range", {"max_chars": 5}, "  12345  ", True),
    ("chars-over", "enterprise:char_count_range", {"max_chars": 4}, "12345", False),
    ("chars-unicode-counts-codepoints", "enterprise:char_count_range", {"min_chars": 3, "max_chars": 3}, "日本語", True),
    ("paragraphs-in-range", "enterprise:paragraph_count_range", {"min_paragraphs": 2, "max_paragraphs": 2}, "a\n\n \n\nb\n", True),
    ("paragraphs-too-few", "enterprise:paragraph_count_range", {"min_paragraphs": 2}, "a\nb", False),
    ("sections-headings-and-bold", "enterprise:section_count", {"min_sections": 3}, "# Scope\ntext\n**Findings:**\ntext\n### Risks\n", True),
    ("sections-hash-needs-space", "enterprise:section_count", {"min_sections": 1}, "#hashtag only", False),
    ("sections-over-max", "enterprise:section_count", {"min_sections": 0, "max_sections": 1}, "# A\n# B", False),
    ("starts-with-leading-space", "enterprise:starts_with", {"prefix": "Core conclusion:"}, "\n  core CONCLUSION: yes", True),
    ("starts-with-case-sensitive", "enterprise:starts_with", {"prefix": "Core", "case_sensitive": True}, "core", False),
    ("ends-with-trailing-space", "enterprise:ends_with", {"suffix": "End."}, "Text. end.  \n", True),
    ("ends-with-missing", "enterprise:ends_with", {"suffix": "End."}, "End. More", False),
    ("keyword-in-range", "enterprise:keyword_frequency", {"keyword": "risk", "min_count": 2, "max_count": 2}, "Risk, risk; risky.", True),
    ("keyword-over-max", "enterprise:keyword_frequency", {"keyword": "risk", "max_count": 1}, "risk RISK", False),
    ("language-en", "enterprise:response_language", {"language": "en"}, EN, True),
    ("language-zh-cn-counts-as-zh", "enterprise:response_language", {"language": "zh"}, ZH, True),
    ("language-wrong", "enterprise:response_language", {"language": "zh"}, EN, False),
    ("language-undetectable-fails", "enterprise:response_language", {"language": "en"}, "123 456", False),
    ("alpha-ordered", "enterprise:ordered_list_items", {"order": "alphabetical"}, "- **apple**\n- Banana\n- cherry", True),
    ("alpha-unordered", "enterprise:ordered_list_items", {"order": "alphabetical"}, "1. pear\n2. apple", False),
    ("alpha-single-item", "enterprise:ordered_list_items", {"order": "alphabetical"}, "- only", False),
    ("chrono-ordered", "enterprise:ordered_list_items", {"order": "chronological"}, "- 2019: founded\n- March 2020: IPO\n- 2020-06-01 merger", True),
    ("chrono-unordered", "enterprise:ordered_list_items", {"order": "chronological"}, "1. 5 May 2021 b\n2. 1 May 2021 a", False),
    ("chrono-missing-date", "enterprise:ordered_list_items", {"order": "chronological"}, "- 2019 a\n- later b", False),
]


@pytest.mark.parametrize(
    "checker_id, kwargs, response, verdict", [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
def test_enterprise_checker_verdicts(checker_id, kwargs, response, verdict):
    assert build_checker(checker_id, kwargs).check(response) is verdict


@pytest.mark.parametrize("checker_id, kwargs", [(case[1], case[2]) for case in CASES[::6]], ids=[case[0] for case in CASES[::6]])
def test_empty_response_fails_every_enterprise_checker(checker_id, kwargs):
    checker = build_checker(checker_id, kwargs)
    assert checker.check("") is False and checker.check_loose("   ") is False


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2024-03-05 event", (2024, 3, 5)),
        ("on 5th March 2024", (2024, 3, 5)),
        ("March 5, 2024 then 1999", (2024, 3, 5)),
        ("in Sept. 2023", (2023, 9, 0)),
        ("back in 1998", (1998, 0, 0)),
        ("item 12 of 300", None),
    ],
    ids=["iso", "day-month-year", "month-day-year-first-wins", "abbrev-month", "year-only", "no-date"],
)
def test_first_date(text, expected):
    assert first_date(text) == expected


@pytest.mark.parametrize(
    "function, text, expected",
    [
        (max_table_rows, TABLE + "\n\ntext\n| x | y |\n|---|---|\n| 1 | 2 |", 2),
        (max_table_rows, "no table", 0),
        (paragraph_count, "", 0),
        (paragraph_count, "a\n\n\n\nb\n\nc", 3),
        (section_count, "## One\n__Two__\nnot **bold** heading", 2),
        (parse_json_object, '```\n{"a": [1]}\n```', {"a": [1]}),
        (parse_json_object, "null", None),
    ],
    ids=["largest-table", "no-table", "no-paragraphs", "many-blank-lines", "sections", "fence-no-lang", "json-null"],
)
def test_helpers(function, text, expected):
    assert function(text) == expected
