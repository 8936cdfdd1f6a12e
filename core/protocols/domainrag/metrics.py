"""DomainRAG's own metrics: F1 and ROUGE-L as the authors' evaluator computes them (the table setting
`tokenizer=jieba`), beside the product's character-level `token_f1` / `rouge_l` (setting `tokenizer=char`).

The authors' rules (ShootingWong/DomainRAG, BCM/evaluation/Evaluator.py at b49ea645):
- no normalisation (their `normalize_fn` defaults to the identity): case and punctuation count;
- a gold alternative made of parts is its parts joined by a space; the score is the best over the alternatives;
- F1 (`f1_zh`): the text is cut by jieba and the words joined by spaces, and the multiset compared is the
  *characters* of that string, the separating spaces included (their Counter runs over a str), so jieba matters
  only through the spaces it adds;
- EM (`exact_match_score` / `em`): the gold contained in the response, as written; EMS (`exact_match_strict_score`
  / `em_strict`): the response equal to the gold. Golds are taken as their list holds them: when the first
  alternative is a string every alternative is one string (best of them); when it is a list of parts, each
  alternative scores the mean over its parts and the best alternative counts (so for EMS a response must equal
  a *part*). The normalised EM/EMS (`exact_match`, `strict_exact_match`: case, width and punctuation folded) stay
  as the named variant `em=normalised` of the paper table;
- ROUGE-L (`rouge_wrapper_zh`, rouge_chinese 1.0.3): the longest common subsequence of the jieba words (the
  library's sentence cut and whitespace collapsing, see `rouge_words`), F = 2PR / (P + R + 1e-8); an empty response
  scores 0 (their except branch).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

from core.store.schema import ReferenceSpec

if TYPE_CHECKING:
    from core.scoring.judges.base import MetricOutcome

METHOD = "domainrag_authors"
SENTENCE_BREAKS = tuple((re.compile(p), r) for p, r in (
    (r"([。！？\?])([^”’])", r"\1\n\2"), (r"(\.{6})([^”’])", r"\1\n\2"), (r"(\…{2})([^”’])", r"\1\n\2"),
    (r"([。！？\?][”’])([^，。！？\?])", r"\1\n\2")))


@lru_cache(maxsize=8192)
def jieba_words(text: str) -> tuple[str, ...]:
    """jieba's segmentation of `text` (default dictionary, HMM on, as the authors call `jieba.cut`)."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return tuple(jieba.cut(text))


def authors_golds(reference: ReferenceSpec) -> list[str]:
    """The gold strings the authors score against: each alternative's parts joined by a space (else its text)."""
    golds = [" ".join(a.parts) if a.parts else a.text for a in reference.answers]
    return [g for g in golds if g]


def authors_f1(prediction: str, gold: str) -> float:
    """The authors' f1_zh: F1 over the characters (spaces included) of the space-joined jieba segmentations."""
    pred, ref = " ".join(jieba_words(prediction)), " ".join(jieba_words(gold))
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def rouge_words(text: str) -> tuple[str, ...]:
    """The words rouge_chinese compares in `text` (jieba words joined by spaces): cut into sentences at 。！？? and
    ellipses and at line breaks, each sentence's whitespace collapsed and split on spaces; a blank sentence gives one
    empty word, as theirs does."""
    joined = " ".join(jieba_words(text))
    for pattern, replacement in SENTENCE_BREAKS:
        joined = pattern.sub(replacement, joined)
    sentences = [s for s in joined.rstrip().split("\n") if s]
    return tuple(w for s in sentences for w in " ".join(s.split()).split(" "))


def authors_rouge_l(prediction: str, gold: str) -> float:
    """The authors' ROUGE-L: rouge_chinese's LCS F-measure over the words of `rouge_words` (0 when either is empty)."""
    from core.scoring.reference import lcs_length

    pred, ref = rouge_words(prediction), rouge_words(gold)
    if not pred or not ref:
        return 0.0
    lcs = lcs_length(list(ref), list(pred))
    precision, recall = lcs / len(pred), lcs / len(ref)
    return 2.0 * precision * recall / (precision + recall + 1e-8)


def authors_alternatives(reference: ReferenceSpec) -> list[str | list[str]]:
    """The gold answers as the authors' list holds them: an alternative made of parts is its list of parts, else its
    text."""
    return [list(a.parts) if a.parts else a.text for a in reference.answers]


def _contains(prediction: str, gold: str) -> float:
    return float(gold in prediction)


def _equals(prediction: str, gold: str) -> float:
    return float(prediction == gold)


def authors_exact(prediction: str, golds: list[str | list[str]], rule: Callable[[str, str], float]) -> float:
    """Their exact_match_score / exact_match_strict_score with the identity normalisation: the best string
    alternative when the first is a string, else the best alternative's mean over its parts (iterating each
    alternative as theirs does)."""
    if isinstance(golds[0], str):
        return max(rule(prediction, gold) for gold in golds)  # type: ignore[arg-type]
    return max(sum(rule(prediction, part) for part in gold) / len(gold) for gold in golds)


def _exact(reference: ReferenceSpec, response: str, name: str) -> MetricOutcome:
    from core.scoring.judges.base import MetricOutcome

    if reference.answer_type not in ("short", "long"):
        return MetricOutcome(status="not_applicable", reason=f"the authors' {name} applies to text answers only")
    golds = authors_alternatives(reference)
    if not golds or any(not g for g in golds):
        return MetricOutcome(status="not_applicable", reason=f"the authors' {name} needs a non-empty gold answer")
    value = authors_exact(response or "", golds, _contains if name == "EM" else _equals)
    return MetricOutcome(value=value, method=METHOD,
                         reason=f"{name} {value:.3f} (the authors' rule: as written, best of {len(golds)} "
                                "alternative(s))")


def exact_match_authors(reference: ReferenceSpec, response: str, language: str | None) -> MetricOutcome:
    """The authors' EM of a response: a gold contained as written (see the module docstring)."""
    return _exact(reference, response, "EM")


def strict_exact_match_authors(reference: ReferenceSpec, response: str, language: str | None) -> MetricOutcome:
    """The authors' EMS of a response: equal to a gold (or a part's mean) as written (see the module docstring)."""
    return _exact(reference, response, "EMS")


def _best(reference: ReferenceSpec, response: str, name: str) -> MetricOutcome:
    from core.scoring.judges.base import MetricOutcome

    if reference.answer_type not in ("short", "long"):
        return MetricOutcome(status="not_applicable", reason=f"the authors' {name} applies to text answers only")
    golds = authors_golds(reference)
    score = authors_f1 if name == "F1" else authors_rouge_l
    value = max((score(response or "", g) for g in golds), default=0.0)
    return MetricOutcome(value=value, method=METHOD,
                         reason=f"{name} {value:.3f} (the authors' rule: jieba, best of {len(golds)} alternative(s))")


def f1_jieba(reference: ReferenceSpec, response: str, language: str | None) -> MetricOutcome:
    """The authors' F1 of a response (see the module docstring), the best over the gold alternatives."""
    return _best(reference, response, "F1")


def rouge_l_jieba(reference: ReferenceSpec, response: str, language: str | None) -> MetricOutcome:
    """The authors' ROUGE-L of a response (see the module docstring), the best over the gold alternatives."""
    return _best(reference, response, "ROUGE-L")
