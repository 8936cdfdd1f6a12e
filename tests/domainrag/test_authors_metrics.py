"""DomainRAG's `tokenizer=jieba` metrics against the authors' evaluator (ShootingWong/DomainRAG,
BCM/evaluation/Evaluator.py at commit b49ea645578be9cca588f836dad7288adfe11296): their F1 rule re-implemented here
from that source (`f1_zh` with the identity normalisation, `f1_score` joining a list answer's parts by a space) and
their ROUGE-L called through the library they call (rouge_chinese 1.0.3, `Rouge().get_scores(...)["rouge-l"]["f"]`
on jieba-joined text), compared on the same responses drawn from the shared slice."""

from __future__ import annotations

import json
from collections import Counter

import jieba
import pytest
from rouge_chinese import Rouge

from core.ingest.importers.domainrag import composite
from core.protocols.domainrag import DOMAINRAG
from core.protocols.domainrag.declarations import F1_JIEBA, ROUGE_L_JIEBA
from core.protocols.domainrag.metrics import f1_jieba, rouge_l_jieba
from core.store.schema import ReferenceSpec
from tests.domainrag.conftest import shared_data

AGREEMENT = 1e-9


def their_f1(prediction: str, ground_truths: list) -> float:
    """Evaluator.f1_score / f1_zh as published (normalize_fn = identity)."""
    def f1_zh(pred: str, gold: str) -> float:
        p, g = " ".join(jieba.cut(pred)), " ".join(jieba.cut(gold))
        same = sum((Counter(p) & Counter(g)).values())
        if same == 0:
            return 0
        precision, recall = same / len(p), same / len(g)
        return 2 * precision * recall / (precision + recall)
    golds = ground_truths if isinstance(ground_truths[0], str) else [" ".join(gt) for gt in ground_truths]
    return max(f1_zh(prediction, gt) for gt in golds)


def their_rouge_l(prediction: str, ground_truths: list) -> float:
    """Evaluator.rouge_score's ROUGE-L as published (rouge_chinese on jieba-joined text, 0 on any exception)."""
    if isinstance(ground_truths[0], list):
        ground_truths = [" ".join(gt) for gt in ground_truths]
    ground_truths = [x for x in ground_truths if len(x) > 0]
    if len(prediction) == 0 or len(ground_truths) == 0:
        return 0.0
    scores = []
    for gt in ground_truths:
        try:
            result = Rouge().get_scores(" ".join(jieba.cut(prediction)), " ".join(jieba.cut(gt)), avg=True)
            scores.append(result["rouge-l"]["f"])
        except Exception:  # noqa: BLE001 - their wrapper's bare except
            scores.append(0.0)
    return max(scores)


def _reference(answers: list) -> ReferenceSpec:
    alternatives = [composite(a) if isinstance(a, list) else {"text": a} for a in answers]
    return ReferenceSpec(answer_type="short", answers=alternatives)


def _responses(record: dict) -> dict[str, str]:
    answers = record["answers"]
    first = " ".join(answers[0]) if isinstance(answers[0], list) else answers[0]
    reference = record["positive_reference"]
    passage = (reference[0] if isinstance(reference, list) else reference)["contents"].replace(" ", "")
    return {"gold": first, "gold-with-extra": f"根据材料，{first}。此外还有其他信息。", "passage": passage[:120],
            "unrelated": "我不知道。", "empty": ""}


def _records(name: str, count: int) -> list[dict]:
    with (shared_data() / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for _, line in zip(range(count), handle, strict=False)]


def test_declared_on_the_protocol():
    assert {F1_JIEBA, ROUGE_L_JIEBA} <= set(DOMAINRAG.metrics)


@pytest.mark.parametrize(("ours", "theirs"), [pytest.param(f1_jieba, their_f1, id="f1"),
                                              pytest.param(rouge_l_jieba, their_rouge_l, id="rouge-l")])
@pytest.mark.parametrize("subset", ["extractive_qa.jsonl", "conversational_qa.jsonl", "time_sensitive_qa.jsonl"])
def test_agrees_with_the_authors_on_slice_responses(ours, theirs, subset):
    compared = 0
    for record in _records(subset, 25):
        for kind, response in _responses(record).items():
            expected = theirs(response, record["answers"])
            got = ours(_reference(record["answers"]), response, "zh").value
            assert got == pytest.approx(expected, abs=AGREEMENT), (kind, response, record["answers"])
            compared += 1
    assert compared == 125


# (metric, gold alternatives, response, hand-worked value)
HAND = [
    # jieba cuts 金融学院 into 金融 / 学院: "金融 学院" has 5 characters (the space counts), "金融学" 3; 3 shared
    # -> P 1, R 3/5 -> F1 3/4 (by plain characters it would be 6/7)
    pytest.param(f1_jieba, [["金融学院"]], "金融学", 3 / 4, id="f1-characters-of-segmented-text"),
    # parts are joined by a space, which jieba keeps as a word: "法语 金融学" -> "法语   金融学" (8 characters) vs
    # "法语" (2) -> 2 shared, P 1, R 2/8 -> 0.4
    pytest.param(f1_jieba, [["法语", "金融学"]], "法语", 0.4, id="f1-counts-the-joining-spaces"),
    # ROUGE-L over words: 法语 / 金融学 (2 words) vs 法语 (1 word): LCS 1, P 1, R 1/2 -> 2/3
    pytest.param(rouge_l_jieba, [["法语", "金融学"]], "法语", 2 / 3, id="rouge-l-words"),
    # no normalisation: upper and lower case differ for the authors
    pytest.param(rouge_l_jieba, [["GPA"]], "gpa", 0.0, id="rouge-l-case-sensitive"),
    pytest.param(rouge_l_jieba, [["法语"]], "", 0.0, id="rouge-l-empty-response"),
]


@pytest.mark.parametrize(("metric", "golds", "response", "expected"), HAND)
def test_hand_worked(metric, golds, response, expected):
    assert metric(_reference(golds), response, "zh").value == pytest.approx(expected, abs=1e-6)
