"""Answer reading on a corpus of answers written the way models write them (tests/fixtures/answer_reading/): option
letters (mcq.jsonl), yes/no polarity (yesno.jsonl) and gold spans (spans.jsonl: number boundaries, decimal points and
percent signs, apostrophe and quote variants, slash alternatives), in English, Chinese and Japanese, each row with its
intended reading (null: no single reading, the metric records 'unparseable').

MCQ rows carry `set`: 'tuning' (written while the reader was built), 'holdout' (written afterwards, 54 of 58 read
before the last four rules were added) or 'templates' (tests/fixtures/answer_reading/templates.yaml, expanded by
tests/scoring/answer_corpus.py: JSON and XML answers, lower-case letters, walk-throughs ending in an answer line,
thinking blocks, markdown, hedges, refusals, several options; 276 of them, 176 read before the reader learnt
structured answers, lower-case letters after a cue, the last answer line and reasoning blocks). Yes/no rows come from
yesno.jsonl and the templates too. Every reading goes through the reference metric, as scoring does. The letter reader is compared, style by style, with the naive rule "the
first standalone capital letter that is an option letter"."""

from __future__ import annotations

import json
import re
import unicodedata
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

from core.generation.reasoning import answer_only
from core.scoring.reference import read_polarity, reference_metric
from core.store.schema import ReferenceSpec
from tests.scoring.answer_corpus import mcq_rows, yesno_rows

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "answer_reading"
MCQ_TARGET = 0.98


@cache
def corpus(name: str) -> tuple[dict, ...]:
    """A corpus file's rows; mcq.jsonl and yesno.jsonl with their template rows."""
    if name == "mcq.jsonl":
        return mcq_rows()
    if name == "yesno.jsonl":
        return yesno_rows()
    return tuple(json.loads(line) for line in (CORPUS / name).read_text(encoding="utf-8").splitlines() if line)


def extract_option(text: str, letters: list[str]) -> str | None:
    """The letter mcq_accuracy reads (the product's path: reasoning kept apart, then the letter reader)."""
    ref = ReferenceSpec(answer_type="mcq", choices={k: f"option {k}" for k in letters}, answer_key=letters[0])
    return reference_metric("mcq_accuracy", ref, text, None).details.get("option")


def naive_letter(text: str, letters: list[str]) -> str | None:
    """The baseline: the first standalone capital letter (after NFKC) that is one of the options."""
    m = re.search(rf"(?<![A-Za-z0-9])([{''.join(letters)}])(?![A-Za-z0-9])", unicodedata.normalize("NFKC", text))
    return m.group(1) if m else None


def mcq_table() -> dict[str, tuple[int, int, int]]:
    """Per style: answers, read correctly by the reader, read correctly by the naive rule."""
    table: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in corpus("mcq.jsonl"):
        counts = table[row["style"]]
        counts[0] += 1
        counts[1] += extract_option(row["text"], row["options"]) == row["intended"]
        counts[2] += naive_letter(row["text"], row["options"]) == row["intended"]
    return {style: tuple(c) for style, c in table.items()}


MCQ_STYLES = ("terse", "markdown", "latex", "answer_line", "cueless", "hedged", "reasoning", "refusal", "several",
              "fullwidth", "json", "xml", "lower_case", "walkthrough", "thinking")


def test_the_corpus_has_every_style_in_three_languages() -> None:
    rows = [*corpus("mcq.jsonl"), *corpus("yesno.jsonl"), *corpus("spans.jsonl")]
    assert len(rows) >= 1000
    assert {r["style"] for r in corpus("mcq.jsonl")} == set(MCQ_STYLES)
    assert {r["language"] for r in rows} == {"en", "zh", "ja"}


@pytest.mark.parametrize("style", [pytest.param(s, id=s) for s in MCQ_STYLES])
def test_mcq_reader_is_at_least_the_naive_rule_on_every_style(style: str) -> None:
    n, reader, naive = mcq_table()[style]
    assert reader >= naive, f"{style}: reader {reader}/{n}, naive {naive}/{n}"


def test_mcq_reader_reads_at_least_98_percent_and_prints_the_table(capsys) -> None:
    table = mcq_table()
    lines = [f"{'style':<12} {'n':>4} {'reader':>7} {'naive':>7}"]
    lines += [f"{s:<12} {n:>4} {r / n:>7.1%} {v / n:>7.1%}" for s, (n, r, v) in table.items()]
    n, reader, naive = (sum(c[i] for c in table.values()) for i in range(3))
    lines.append(f"{'overall':<12} {n:>4} {reader / n:>7.1%} {naive / n:>7.1%}")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    missed = [(r["text"], r["intended"], extract_option(r["text"], r["options"])) for r in corpus("mcq.jsonl")
              if extract_option(r["text"], r["options"]) != r["intended"]]
    assert reader / n >= MCQ_TARGET, missed
    wrong = [m for m in missed if m[2] is not None]  # a letter read that is not the one meant: never
    assert not wrong, wrong


def test_polarities_are_read_at_98_percent_and_never_wrongly() -> None:
    rows = corpus("yesno.jsonl")
    read = [(r["text"], r["intended"], read_polarity(answer_only(r["text"]))) for r in rows]
    assert sum(got == want for _, want, got in read) / len(rows) >= MCQ_TARGET
    assert not [x for x in read if x[2] is not None and x[2] != x[1]]


@pytest.mark.parametrize("language", ["en", "zh", "ja"])
def test_an_answer_without_a_single_letter_is_unparseable_never_wrong(language: str) -> None:
    rows = [r for r in corpus("mcq.jsonl") if r["intended"] is None and r["language"] == language]
    assert rows
    for row in rows:
        ref = ReferenceSpec(answer_type="mcq", choices={k: f"option {k}" for k in row["options"]}, answer_key="A")
        out = reference_metric("mcq_accuracy", ref, row["text"], row["language"])
        assert out.status == "unparseable", (row["text"], out)


def yesno_params() -> list:
    return [pytest.param(r, id=f"{r['language']}-{r['style']}-{i}") for i, r in enumerate(corpus("yesno.jsonl"))]


@pytest.mark.parametrize("row", yesno_params())
def test_yes_no_is_read_by_polarity(row: dict) -> None:
    assert read_polarity(answer_only(row["text"])) == row["intended"], row["text"]


@pytest.mark.parametrize("row", yesno_params())
def test_yes_no_exact_match_scores_the_polarity(row: dict) -> None:
    gold = {"en": ("yes", "no"), "zh": ("是", "否"), "ja": ("はい", "いいえ")}[row["language"]]
    for text, polarity in zip(gold, ("yes", "no"), strict=True):
        ref = ReferenceSpec(answer_type="boolean", answers=[{"text": text}])
        out = reference_metric("exact_match", ref, row["text"], row["language"])
        if row["intended"] is None:
            assert out.status == "unparseable", (row["text"], out)
        else:
            assert (out.status, out.value) == ("ok", float(row["intended"] == polarity)), (row["text"], text, out)


@pytest.mark.parametrize("row", [pytest.param(r, id=f"{r['language']}-{r['style']}-{i}")
                                 for i, r in enumerate(corpus("spans.jsonl"))])
def test_gold_spans_are_found_only_where_intended(row: dict) -> None:
    ref = ReferenceSpec(answer_type="short", answers=[{"text": row["gold"]}])
    out = reference_metric("exact_match", ref, row["text"], row["language"])
    assert out.value == float(row["intended"]), (row["gold"], row["text"], out)
