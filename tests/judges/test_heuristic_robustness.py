"""The heuristic judge is hard to fool: invented numbers, negation, off-topic coverage, refusal vs caveat, CJK."""

from __future__ import annotations

import asyncio
import statistics

import pytest

from core.generation.baselines import score_sentences
from core.scoring.judges.base import ConstraintView, DocumentView, JudgeInput
from core.scoring.judges.heuristic import UNSUPPORTED_LANGUAGE_REASON, HeuristicJudge, detect_refusal
from core.scoring.judges.text import cjk_language, content_words, negated, plain, quantities, sentences
from tests.judges.conftest import judge_input, sample_input, sample_instances

J = HeuristicJudge()


def run(coro):
    return asyncio.run(coro)


def docs_input(response: str, *texts: str, query: str = "What does the procedure say?") -> JudgeInput:
    documents = [DocumentView(position=i, doc_uid=f"d{i}", title=f"Doc {i}", text=t) for i, t in enumerate(texts)]
    return JudgeInput(query=query, mode="noisy", documents=documents, response=response)


def claim_supported(item: JudgeInput) -> tuple[bool, str]:
    out = run(J.faithfulness(item))
    assert out.status == "ok" and len(out.details["claims"]) == 1, out
    (claim,) = out.details["claims"]
    return claim["supported"], claim["reason"]


@pytest.mark.parametrize(
    ("item", "supported", "reason_part"),
    [
        pytest.param(judge_input("noisy", "The X200 pump has a warranty period of 36 months from installation."),
                     False, "invented number", id="invented-figure-despite-word-overlap"),
        pytest.param(judge_input("noisy", "The X200 pump has a warranty period of 24 weeks from installation."),
                     False, "invented number", id="same-figure-other-unit"),
        pytest.param(judge_input("noisy", "The X200 pump has a warranty period of 24 months from installation [1]."),
                     True, "overlap", id="citation-marker-is-not-a-number"),
        pytest.param(judge_input("gap", "Form Q7 must be filed by the end of March."), False, "invented number",
                     id="identifier-number-transferred"),
        pytest.param(sample_input("energy-conflict-01",
                                  "Alarm stage 1 is set at 0.520 MPa absolute, referred to 20 C."),
                     True, "overlap", id="decimal-trailing-zero"),
        pytest.param(sample_input("financial-conflict-01", "The ongoing charges figure is 0.85% per year for Class A."),
                     True, "overlap", id="percent-sign-vs-percent-word"),
        pytest.param(sample_input("financial-conflict-01", "The ongoing charges figure is 0.75% per year for Class A."),
                     False, "0.75", id="invented-percentage"),
        pytest.param(sample_input("financial-conflict-01", "The minimum initial investment is EUR 1000 for Class A."),
                     True, "overlap", id="thousands-separator"),
        pytest.param(sample_input("financial-conflict-01", "The minimum initial investment is EUR 1,500 for Class A."),
                     False, "1500", id="invented-amount"),
        pytest.param(docs_input("The inspection is repeated after 2 weeks.",
                                "The inspection is repeated after two weeks."),
                     True, "overlap", id="number-word-in-document"),
    ],
)
def test_invented_numbers(item: JudgeInput, supported: bool, reason_part: str) -> None:
    got, reason = claim_supported(item)
    assert got is supported and reason_part in reason, reason


@pytest.mark.parametrize(
    ("item", "supported"),
    [
        pytest.param(judge_input("noisy", "Claims must not be filed through the dealer portal."), False, id="not"),
        pytest.param(judge_input("noisy", "Claims cannot be filed through the dealer portal."), False, id="cannot"),
        pytest.param(judge_input("noisy", "The warranty never covers seals and the motor assembly."), False,
                     id="never"),
        pytest.param(judge_input("noisy", "The warranty doesn't cover seals and the motor assembly."), False, id="nt"),
        pytest.param(judge_input("noisy", "The warranty does not cover seals and the motor assembly."), False,
                     id="does-not"),
        pytest.param(docs_input("Work starts without a permit.", "A permit is required before work starts."), False,
                     id="without"),
        pytest.param(docs_input("A permit is not required for this work.", "A permit is required for this work."),
                     False,
                     id="not-required-vs-required"),
        pytest.param(docs_input("The canteen opens on Sundays.", "The canteen does not open on Sundays."), False,
                     id="document-negated-claim-positive"),
        pytest.param(docs_input("The canteen doesn't open on Sundays.", "The canteen does not open on Sundays."), True,
                     id="same-polarity"),
        pytest.param(docs_input("Claims must be filed within 30 days after the fault.",
                                "Claims must be filed no later than 30 days after the fault."), True,
                     id="no-later-than-is-a-bound"),
        pytest.param(docs_input("The warranty period is 24 months.",
                                "The pump needs no priming, and the warranty period is 24 months."), True,
                     id="negation-in-another-clause"),
        pytest.param(docs_input("Match funding: not required.", "Match funding is not required."), True,
                     id="key-value-line-same-polarity"),
        pytest.param(docs_input("Entry charge: none.", "The entry charge is none, and there is no exit charge."), True,
                     id="key-value-none"),
        pytest.param(docs_input("Match funding: required.", "Match funding is not required."), False,
                     id="key-value-line-flipped"),
        pytest.param(docs_input("Match funding: not required.", "Match funding is 25 percent required.",
                                "Match funding: not required."), True, id="an-equally-good-match-agrees"),
    ],
)
def test_negation_flips(item: JudgeInput, supported: bool) -> None:
    got, reason = claim_supported(item)
    assert got is supported, reason
    if not supported:
        assert "negation" in reason, reason


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("X is required.", False, id="plain"),
        pytest.param("X is not required.", True, id="not"),
        pytest.param("X isn’t required.", True, id="curly-apostrophe"),
        pytest.param("No later than 5 days.", False, id="bound-idiom"),
        pytest.param("Not only X but also Y.", False, id="not-only"),
        pytest.param("Nobody may enter.", False, id="nobody-is-a-word"),
    ],
)
def test_negated(text: str, expected: bool) -> None:
    assert negated(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("0.50 MPa", {("0.5", "mpa")}, id="trailing-zero"),
        pytest.param("5%, 5 percent and 5 per cent", {("5", "%")}, id="percent-forms"),
        pytest.param("EUR 1,000 or 2,5 kg", {("1000", None), ("2.5", "kg")}, id="separators"),
        pytest.param("a 12-month interval", {("12", "month")}, id="hyphenated-unit"),
        pytest.param("see [doc 2] and [3]", set(), id="citations-skipped"),
        pytest.param("on 12 May", {("12", None)}, id="unknown-word-no-unit"),
    ],
)
def test_quantities(text: str, expected: set) -> None:
    assert quantities(text) == expected


OFF_TOPIC_ENERGY = ("The KX-24 72.5 kV switchgear uses a mechanical pointer density relay. Inspect gas density every "
                    "24 months. The alarm contact operates at 0.40 MPa and the lockout contact at 0.36 MPa.")


@pytest.mark.parametrize(
    ("item", "low", "high"),
    [
        pytest.param(judge_input("noisy", "The canteen opens at 8 am on weekdays."), 0.0, 0.0, id="canteen"),
        pytest.param(sample_input("energy-noisy-01", OFF_TOPIC_ENERGY), 0.0, 0.1, id="near-miss-other-model"),
        pytest.param(sample_input("energy-noisy-01", "Switchgear density and alarm settings must be inspected by the "
                                  "crew, and alarms must be handled carefully when raised."), 0.0, 0.1,
                     id="generic-words-of-the-question"),
    ],
)
def test_coverage_needs_key_content(item: JudgeInput, low: float, high: float) -> None:
    out = run(J.coverage(item, run(J.context_claims(item))))
    assert out.status == "ok" and low <= out.value <= high, out


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        pytest.param("I could not find anything in the material about this.", True, id="could-not-find"),
        pytest.param("The documents don't mention a penalty for form Q7.", True, id="documents-dont-mention"),
        pytest.param("The documents don’t mention a penalty for form Q7.", True, id="curly-apostrophe"),
        pytest.param("There is no information about Q7 penalties.", True, id="no-information-about"),
        pytest.param("I'm unable to answer from the provided sources.", True, id="unable-to-answer"),
        pytest.param("Nothing in the provided context covers late filing of form Q7.", True, id="nothing-in-context"),
        pytest.param("None of the documents addresses form Q7.", True, id="none-of-the-documents"),
        pytest.param("The question cannot be answered from these documents.", True, id="cannot-be-answered"),
        pytest.param("The retrieved sources are silent on form Q7 penalties.", True, id="sources-silent"),
        pytest.param("Unfortunately, I couldn't locate a penalty for Q7 in the documents provided.", True,
                     id="couldnt-locate"),
        pytest.param("I could not find the penalty for form Q7 in the documents. They only describe Form Q5, which "
                     "must be filed by the end of March.", True, id="refusal-then-what-the-documents-cover"),
        pytest.param("The penalty for filing form Q7 late is 50 EUR per month.", False, id="guess"),
        pytest.param("The warranty does not cover shipping damage.", False, id="negated-claim-is-not-a-refusal"),
        pytest.param("Seals are not covered by the warranty.", False, id="not-covered-by-something-else"),
        pytest.param("The supplier did not provide the test certificate.", False, id="someone-did-not-provide"),
        pytest.param("It does not cover shipping damage.", False, id="it-is-not-the-documents"),
        pytest.param("The penalty is not specified anywhere in the provided material.", True, id="not-specified-in-docs"),
        pytest.param("I did not find the penalty in the documents.", True, id="i-did-not-find"),
    ],
)
def test_broadened_refusal(text: str, refused: bool) -> None:
    assert detect_refusal(text)[0] is refused, detect_refusal(text)


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        pytest.param("The X200 pump has a warranty period of 24 months from installation [1]. The manual does not "
                     "specify shipping costs.", False, id="answer-then-caveat"),
        pytest.param("The warranty is 24 months [1]. I could not find the claims address in the documents.", False,
                     id="answer-then-could-not-find"),
        pytest.param("The documents do not state it directly. However, the X200 pump has a warranty period of 24 "
                     "months from installation, covering seals and the motor assembly.", False,
                     id="leading-caveat-then-answer"),
        pytest.param("The provided documents do not contain the penalty. Typically the penalty is 50 EUR per month "
                     "of delay.", False, id="refusal-then-guess"),
        pytest.param("The provided documents do not contain the penalty for form Q7.", True, id="pure-refusal"),
        pytest.param("There is no information about Q7. The documents do not mention penalties. Filing rules for Q7 "
                     "are not covered.", True, id="all-refusal"),
    ],
)
def test_caveat_is_not_abstention(text: str, refused: bool) -> None:
    assert detect_refusal(text)[0] is refused, detect_refusal(text)
    out = run(J.refusal(judge_input("noisy", text)))
    assert out.value == float(refused), out.reason


ZH_RESPONSE = "根据文件，X200 泵的保修期为自安装之日起 24 个月。保修范围包括密封件和电机组件。"
JA_RESPONSE = "資料によると、X200ポンプの保証期間は設置日から24か月です。保証はシールとモーターを対象とします。"
ZH_DOC = "X200 泵自安装之日起保修 24 个月。保修范围包括密封件和电机组件。索赔须通过经销商门户提交。"
CJK_METRICS = ("faithfulness", "coverage", "conflict_recognition")  # refusal-based ones work for zh/ja


@pytest.mark.parametrize(
    ("item", "language"),
    [
        pytest.param(judge_input("noisy", ZH_RESPONSE), "zh", id="chinese-response"),
        pytest.param(judge_input("noisy", JA_RESPONSE), "ja", id="japanese-response"),
        pytest.param(docs_input("The warranty is 24 months.", ZH_DOC, ZH_DOC), "zh", id="chinese-documents"),
    ],
)
def test_cjk_is_unsupported(item: JudgeInput, language: str) -> None:
    claims = run(J.context_claims(item))
    outs = [run(J.coverage(item, claims)) if m == "coverage" else run(getattr(J, m)(item)) for m in CJK_METRICS]
    for metric, out in zip(CJK_METRICS, outs, strict=True):
        assert (out.status, out.value, out.reason) == ("not_applicable", None, UNSUPPORTED_LANGUAGE_REASON), metric
        assert out.details["language"] == language, metric
    # refusal detection knows Chinese and Japanese: an answer is not a refusal, a refusal is
    assert run(J.rejection(item)).value == 0.0 and run(J.refusal(item)).value == 0.0
    refusal = {"zh": "根据提供的文档，无法回答这个问题，文档中没有相关信息。", "ja": "提供された文書には記載されていないため、回答できません。"}[language]
    assert run(J.rejection(item.model_copy(update={"response": refusal}))).value == 1.0
    gap = ConstraintView(cid="g", text="Refuse when the material lacks the answer.", sub_dimension="knowledge_gap")
    (c,) = run(J.judge_constraints(item.model_copy(update={"mode": "gap", "response": refusal}), [gap], "batched"))
    assert (c.status, c.passed) == ("ok", True)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        pytest.param(ZH_RESPONSE, "zh", id="zh"),
        pytest.param(JA_RESPONSE, "ja", id="ja"),
        pytest.param("The Vela 7 launches in Shenzhen (深圳) on 14 March.", None, id="english-with-a-cjk-name"),
        pytest.param("", None, id="empty"),
    ],
)
def test_cjk_language(text: str, language: str | None) -> None:
    assert cjk_language(text) == language


def gold_extract(uid: str, n: int = 4) -> str:
    """A correct extractive answer: the answer-bearing documents' sentences that state the instance's answer notes."""
    row = sample_instances()[uid]
    notes = row["metadata"]["answer_notes"]
    words, figures = content_words(notes), quantities(notes)
    found = [(len(content_words(s) & words) + 2 * len(quantities(s) & figures), k, s)
             for k, d in enumerate(row["documents"], start=1) if d["role"] in ("supporting", "conflicting")
             for s in sentences(plain(d["text"]))]
    return " ".join(f"{s} [doc {k}]" for _, k, s in sorted(found, key=lambda f: -f[0])[:n])


def answer_documents(uid: str) -> str:
    """The fullest extractive answer: the answer-bearing documents' whole text."""
    docs = sample_instances()[uid]["documents"]
    return " ".join(plain(d["text"]) for d in docs if d["role"] in ("supporting", "conflicting"))


def near_miss(uid: str) -> str:
    """Off-topic but close: the noise documents' 3 sentences most like the query (another model, drug, fund...)."""
    row = sample_instances()[uid]
    docs = [(k, plain(d["text"])) for k, d in enumerate(row["documents"], start=1) if d["role"] == "noise"]
    return " ".join(f"{s} [doc {k}]" for _, k, s in score_sentences(docs, row["query"])[:3])


def answered_instances() -> list[str]:
    return [uid for uid, row in sample_instances().items() if row["mode"] in ("noisy", "conflict")]


def coverage_of(uid: str, response: str) -> float:
    item = sample_input(uid, response)
    return run(J.coverage(item, run(J.context_claims(item)))).value


@pytest.mark.parametrize(
    ("answer", "low_mean", "high_mean", "high_max"),
    [
        pytest.param(lambda k, uids: gold_extract(uids[k]), 0.5, 1.0, 1.0, id="correct-extractive"),
        pytest.param(lambda k, uids: answer_documents(uids[k]), 0.85, 1.0, 1.0, id="answer-documents-in-full"),
        pytest.param(lambda k, uids: gold_extract(uids[(k + 6) % len(uids)]), 0.0, 0.02, 0.05,
                     id="other-domain-answer"),
        pytest.param(lambda k, uids: "Regarding your question: " + sample_instances()[uids[k]]["query"],
                     0.0, 0.02, 0.05, id="question-echo"),
        pytest.param(lambda k, uids: near_miss(uids[k]), 0.0, 0.08, 0.35, id="near-miss-noise-sentences"),
    ],
)
def test_coverage_calibration_on_sample(answer, low_mean: float, high_mean: float, high_max: float) -> None:
    uids = answered_instances()
    values = [coverage_of(uid, answer(k, uids)) for k, uid in enumerate(uids)]
    assert len(values) == 24 and low_mean <= statistics.mean(values) <= high_mean, values
    assert max(values) <= high_max, values
