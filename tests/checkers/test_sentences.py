"""The punkt-compatible sentence splitter."""

from __future__ import annotations

import pytest

from core.scoring.checkers.sentences import split_sentences

CASES = [
    ("empty", "", []),
    ("simple", "One. Two! Three?", ["One.", "Two!", "Three?"]),
    ("abbreviations", "Mr. Smith met Dr. Jones in the U.S. yesterday. Then he left.", ["Mr. Smith met Dr. Jones in the U.S. yesterday.", "Then he left."]),
    ("eg-ie", "Use fruit, e.g. apples. Fine.", ["Use fruit, e.g. apples.", "Fine."]),
    ("capital-initial", "J. R. R. Tolkien wrote it. Yes.", ["J. R. R. Tolkien wrote it.", "Yes."]),
    ("lowercase-letter-ends-sentence", "It is in o. Let us go.", ["It is in o.", "Let us go."]),
    ("numbered-list-lowercase", "Steps: 1. mix 2. bake.", ["Steps: 1. mix 2. bake."]),
    ("number-before-capital", "We got 3. Then more.", ["We got 3.", "Then more."]),
    ("ellipsis-lowercase", "Wait... and see. Ok.", ["Wait... and see.", "Ok."]),
    ("ellipsis-capital", "Wait... Then go.", ["Wait...", "Then go."]),
    ("quote-closer", "He said \"Stop.\" She did.", ["He said \"Stop.\"", "She did."]),
    ("newlines-do-not-split", "Title\nBody text here", ["Title\nBody text here"]),
    ("bold-closer", "**Done.** Next one.", ["**Done.**", "Next one."]),
    ("unicode", "Ça va? Très bien.", ["Ça va?", "Très bien."]),
]


@pytest.mark.parametrize("text, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected
