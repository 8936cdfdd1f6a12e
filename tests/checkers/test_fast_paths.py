"""The fast per-response computations give exactly the slow library answers they replace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langdetect import DetectorFactory, detect
from langdetect.lang_detect_exception import LangDetectException

from core.langid import detect_language, extract_ngrams
from core.scoring.checkers.base import loose_variants
from core.scoring.checkers.sentences import split_sentences
from core.scoring.checkers.text import capital_word_count, treebank_capital_count

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "ifeval"


def _responses() -> list[str]:
    path = SHARED / "input_response_data_gpt4.jsonl"
    if not path.is_file():
        pytest.fail(f"shared IFEval responses not found at {path}")
    return [json.loads(line)["response"] for line in path.read_text(encoding="utf-8").splitlines()]


def _langdetect(text: str) -> str | None:
    DetectorFactory.seed = 0
    try:
        return detect(text)
    except LangDetectException:
        return None


SAMPLES = [
    ("english", "The committee approved the budget for the next fiscal year after a long debate."),
    ("german", "Der Ausschuss hat den Haushalt für das nächste Geschäftsjahr nach langer Debatte genehmigt."),
    ("chinese", "委员会经过长时间的辩论，批准了下一财年的预算。"),
    ("russian", "Комитет утвердил бюджет на следующий финансовый год после долгих дебатов."),
    ("capitals-and-url", "SEE https://example.com OR MAIL a@b.io — THE REPORT IS READY."),
    ("digits-only", "12345 678"),
    ("mixed-short", "ok"),
]


@pytest.mark.parametrize("text", [s[1] for s in SAMPLES], ids=[s[0] for s in SAMPLES])
def test_language_matches_langdetect_on_samples(text):
    assert detect_language(text) == _langdetect(text)


def test_language_matches_langdetect_on_every_fifth_ifeval_response():
    responses = _responses()[::5]
    assert [detect_language(t) for t in responses] == [_langdetect(t) for t in responses]


def _varied_texts(responses: list[str]) -> list[str]:
    """IFEval responses with all their loose variants, short prefixes (long, close-run trials) and samples."""
    texts = [variant for response in responses for variant in loose_variants(response)]
    texts += [response[:size] for response in responses[::3] for size in (3, 12, 40, 150)]
    texts += [" ".join(s[1] for s in SAMPLES[i : i + 2]) for i in range(len(SAMPLES) - 1)]
    return list(dict.fromkeys(texts))


def test_language_matches_langdetect_on_loose_variants_and_prefixes():
    texts = _varied_texts(_responses()[2::9])
    assert len(texts) >= 300
    mismatches = [(t[:60], ours, theirs) for t in texts if (ours := detect_language(t)) != (theirs := _langdetect(t))]
    assert mismatches == []


@pytest.mark.slow
def test_language_matches_langdetect_on_every_ifeval_response_variant():
    texts = _varied_texts(_responses())
    mismatches = [(t[:60], ours, theirs) for t in texts if (ours := detect_language(t)) != (theirs := _langdetect(t))]
    assert mismatches == []


def test_ngram_extraction_matches_langdetect():
    from langdetect import detector_factory

    detector_factory.init_factory()
    tricky = [
        "Tiếng Việt có dấu: Trường học",  # combining marks (normalize_vi)
        "日本語のテキスト、カタカナ、ひらがな ㄅㄆㄇ 한국어",  # kana, bopomofo, hangul normalisation
        "مرحبا بالعالم یی ȘȚ șț",  # Farsi yeh, Romanian comma-below letters
        "Emoji 😀 text 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \ud800 lone surrogate",  # astral code points
        "ABC DEF ghi JKL mNo  McDonald's  iPhone",  # capitalised words
        "  leading  and trailing  ",
        "\x00\x01abc",
        "A",
        " ",
    ]
    for text in _responses()[::7] + tricky:
        detector = detector_factory._factory.create()
        detector.append(text)
        detector.cleaning_text()
        assert extract_ngrams(text) == detector._extract_ngrams()


def test_capital_word_count_matches_treebank_on_ifeval_responses():
    responses = _responses()
    fast = [capital_word_count(t) for t in responses]
    slow = [sum(treebank_capital_count(s) for s in split_sentences(t)) for t in responses]
    assert fast == slow


@pytest.mark.parametrize(
    "text, expected",
    [("WE'RE GONNA WIN", 5), ("I can't", 1), ("(NASA), U.S.A. and A/B", 3), ("", 0), ("ÜBER ALLES", 2)],
    ids=["contraction-and-gonna", "lower-contraction", "punctuation", "empty", "non-ascii"],
)
def test_capital_word_count_cases(text, expected):
    assert capital_word_count(text) == expected == treebank_capital_count(text)


def test_language_kernel_compiles_in_a_fresh_process_without_cache(tmp_path):
    """A fresh clone has no numba cache: the first detection compiles the kernel and answers like langdetect."""
    import os
    import subprocess
    import sys

    code = (
        "from core.langid import warm_up, detect_language\n"
        "seconds, cached = warm_up()\n"
        "print(cached, detect_language('Der Ausschuss hat den Haushalt genehmigt.'))\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    root = Path(__file__).resolve().parents[2]
    for expected_cached in (False, True):  # compiled and cached on the first run, loaded on the second
        result = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == [str(expected_cached), _langdetect("Der Ausschuss hat den Haushalt genehmigt.")]
