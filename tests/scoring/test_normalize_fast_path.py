"""squad_normalize and character_normalize change only the candidate characters a regular expression finds (ASCII
punctuation, ASCII whitespace and control characters, non-ASCII characters) instead of testing every character: on
seeded random texts over a pool of every ASCII character, number marks, Unicode digits, spaces and punctuation, and on
sentences, they give exactly what the per-character code they replaced gave."""

from __future__ import annotations

import random

import pytest

from core.scoring.reference import (
    ARTICLES_RE,
    ASCII_PUNCTUATION,
    CJK_GAP_RE,
    DIGIT_GAP_RE,
    _between_digits,
    character_normalize,
    han_numerals,
    is_punctuation,
    number_lists,
    number_mark,
    squad_normalize,
    unify_marks,
)


def per_character_squad(text: str) -> str:
    """squad_normalize as written before the fast path (one test per character)."""
    text = unify_marks(text).lower()
    text = "".join(ch if number_mark(text, i) else "" if ch in ASCII_PUNCTUATION else " " if is_punctuation(ch) else ch
                   for i, ch in enumerate(text))
    return " ".join(ARTICLES_RE.sub(" ", text).split())


def per_character_character(text: str) -> str:
    """character_normalize as written before the fast path (one test per character)."""
    text = DIGIT_GAP_RE.sub(",", number_lists(han_numerals(CJK_GAP_RE.sub("", unify_marks(text).lower()))))
    return "".join(ch for i, ch in enumerate(text)
                   if number_mark(text, i) or ch == "," and _between_digits(text, i)
                   or not is_punctuation(ch) and not ch.isspace())


# every ASCII character, number marks beside digits, non-decimal and non-ASCII digits, Unicode spaces, dashes,
# quotes, CJK and full-width punctuation, Han numerals and letters, accented letters, a connector punctuation
POOL = [chr(c) for c in range(128)] + list("0123456789.%,  ") * 4 + list(
    "٣፩²①\u00a0\u2009\u3000\u2028\u1680–—‐’‘“”«»¿¡。、，；：！？（）【】《》「」・…％．０１２一二十百千万第三月人中文日本語éüñßÅ‿⁀℃") + [
    "the ", "an ", "a ", "The "]
SENTENCES = [
    pytest.param("The answer is 6.4% (not 64), e.g. 1,000 or 3.", id="english"),
    pytest.param("In 2019—the year—they won 3–1; ‘quoted’ and “double”.", id="dashes-and-quotes"),
    pytest.param("答案是二十三，第三章：８、９。", id="chinese"),
    pytest.param("東京は日本の首都です（約1,400万人）。", id="japanese"),
    pytest.param("674 702 and 8 , 9 % 5 . 5", id="spaced-numbers"),
    pytest.param("", id="empty"),
]


def _random_texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(POOL, k=rng.randint(0, 40))) for _ in range(count)]


@pytest.mark.parametrize("normalise, reference", [
    pytest.param(squad_normalize, per_character_squad, id="by-word"),
    pytest.param(character_normalize, per_character_character, id="by-character"),
])
def test_the_fast_path_equals_the_per_character_code(normalise, reference) -> None:
    texts = [p.values[0] for p in SENTENCES] + _random_texts(seed=11, count=4000)
    assert [normalise(t) for t in texts] == [reference(t) for t in texts]


@pytest.mark.parametrize("text", SENTENCES)
def test_sentences_normalise_alike(text: str) -> None:
    assert (squad_normalize(text), character_normalize(text)) == (per_character_squad(text),
                                                                  per_character_character(text))
