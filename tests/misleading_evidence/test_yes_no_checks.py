"""Issue 43.5: a rule that flips a yes/no answer is checked against the question (it is a yes/no question, and the edit
changes what the question asks about), by rules from data/wordlists/yes_no.en.json; word lists are language-tagged
data files, and a language without one is refused by name."""

from __future__ import annotations

import pytest

from core.language import wordlists
from core.protocols.misleading_evidence.builder import Edit
from core.protocols.misleading_evidence.builder_generative import rule_flip, yes_no_question

CASES = [
    # name, question, gold, wrong, before, after, clean evidence, expected (None: the rules cannot tell)
    ("asked property removed", "Are Ann Lee and Bo Ray both directors?", "yes", "no", "director", "musician",
     "Ann Lee is a director. Bo Ray is a director.", True),
    ("asked property supplied", "Are both X and Y American film directors?", "no", "yes", "a French", "an American",
     "X is an American director. Y is a French director.", True),
    ("order question, figure moved", "Was Splash released before Tangled?", "yes", "no", "1984", "2011",
     "Splash was released in 1984. Tangled was released in 2010.", True),
    ("shared property changed", "Were A and B from the same country?", "yes", "no", "French", "Colombian",
     "A was French. B was French.", True),
    ("edit of a word the question does not ask about", "Are Ann Lee and Bo Ray both directors?", "yes", "no",
     "Paris", "Rome", "Ann Lee is a director born in Paris. Bo Ray is a director.", None),
    ("wrong answer not the opposite", "Are Ann Lee and Bo Ray both directors?", "yes", "yes", "director",
     "musician", "Ann Lee is a director.", False),
    ("edit that changes nothing", "Are Ann Lee and Bo Ray both directors?", "yes", "no", "director", "director",
     "Ann Lee is a director.", False),
]


@pytest.mark.parametrize("name, question, gold, wrong, before, after, clean, expected", CASES,
                         ids=[c[0] for c in CASES])
def test_rule_flip(name, question, gold, wrong, before, after, clean, expected):
    verdict = rule_flip(question, gold, wrong, Edit(0, before, after, "rule"), clean)
    assert (None if verdict is None else verdict.passed) is expected
    assert verdict is None or (verdict.reason and verdict.by == "rule")


@pytest.mark.parametrize("question, expected", [
    ("Are both Kyosuke Himuro and Boy George musicians?", True), ("Was the film Splash released before Tangled?", True),
    ("Which band formed first, Blur or Oasis?", False), ("Who directed Splash?", False), ("", False)])
def test_yes_no_question(question, expected):
    assert yes_no_question(question) is expected


def test_word_lists_are_language_tagged_and_an_unknown_language_is_refused():
    assert wordlists("yes_no", "en")["language"] == "en"
    with pytest.raises(ValueError, match="unsupported for language 'ja'; known: en"):
        wordlists("yes_no", "ja")


@pytest.mark.parametrize(("name", "languages"), [
    pytest.param("misleading_evidence", ["en"], id="rule-builder-word-lists"),
    pytest.param("review_note", ["en", "zh"], id="mcq-review-note"),
    pytest.param("fusion", ["en"], id="constraint-fusion-tables"),
])
def test_builder_knowledge_lives_in_tagged_data_files(name, languages):
    """The rule builders' word lists and tables are data files, one per language, read by the one loader; a language
    with no file is refused by name (nothing falls back silently)."""
    from core.language import wordlist_languages

    assert wordlist_languages(name) == languages
    assert all(wordlists(name, lang)["language"] == lang for lang in languages)
    with pytest.raises(ValueError, match=f"unsupported for language 'ja'; known: {', '.join(languages)}"):
        wordlists(name, "ja")


def test_mcq_review_note_reads_its_language_file():
    from core.protocols.misleading_evidence.builder import META_OPTIONS

    assert wordlists("review_note", "zh")["assertion"].format(answer="乙") == "本题的正确答案是乙。"
    assert META_OPTIONS.search("None of the above") and META_OPTIONS.search("以上都是")
    assert not META_OPTIONS.search("Aspirin")
