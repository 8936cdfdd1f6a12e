"""Each benchmark's own measures (core.scoring.benchmarks): scripted gold, wrong and refusing responses score 1 / 0 /
rejection 1 where each benchmark says so, in English and Chinese; RAMDocs' no-wrong-answer check on single-answer
records; CRAG's false-premise questions; RGB's noise-ratio conditions; and the measures stored by `score_run` on
both backends (instances of RGB, RAMDocs, CRAG and FollowRAG shapes written here, answers from their published files)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from core.protocols.prompting import condition_bundle
from core.protocols.reference_qa import REFERENCE_QA
from core.scoring.benchmarks import BenchmarkItem, benchmark_metric, benchmark_override
from core.scoring.reference import reference_metric
from core.scoring.scorer import score_run
from core.store.models import Instance, Response, Verdict
from core.store.schema import ReferenceSpec
from tests.judges.conftest import seed_run

RGB_EN = ReferenceSpec(answer_type="short", answers=[{"text": "Tampa, Florida"}], wrong_answers=["Glendale, Arizona"])
RGB_ZH = ReferenceSpec(answer_type="short", answers=[{"text": "2.3%"}], wrong_answers=["12.3%"])
RGB_INT = ReferenceSpec(answer_type="multi", answers=[{"text": "6.4%"}, {"text": "18%"}])
RAM_ONE = ReferenceSpec(answer_type="short", answers=[{"text": "1856"}], wrong_answers=["1900"])
RAM_TWO = ReferenceSpec(answer_type="multi", answers=[{"text": "1987"}, {"text": "1988"}], wrong_answers=["1995"])
CRAG_REF = ReferenceSpec(answer_type="short", answers=[{"text": "william shakespeare", "aliases": ["shakespeare"]}])
CRAG_FP = ReferenceSpec(answer_type="unanswerable", answers=[{"text": "invalid question"}])
FOLLOW = ReferenceSpec(answer_type="short", answers=[{"text": "Gravity/Gravity, or gravitation"}])
FOLLOW_DATE = ReferenceSpec(answer_type="short", answers=[{"text": "1999/2001"}])
PLAIN = ("supporting", "noise", "noise", "noise", "noise")
NEGATIVES = ("noise",) * 5
FAKE = ("counterfactual", "noise", "noise")
FP = {"question_type": "false_premise"}


@dataclass(frozen=True)
class Scored:
    """One response and the value a measure must give it (None: not applicable)."""

    metric: str
    ref: ReferenceSpec
    uid: str
    response: str
    want: float | None
    language: str = "en"
    roles: tuple[str, ...] = PLAIN
    attributes: tuple[tuple[str, str], ...] = ()


def case(cid: str, *args, **kwargs) -> pytest.param:  # type: ignore[valid-type]
    return pytest.param(Scored(*args, **kwargs), id=cid)


MEASURES = [
    # RGB: scripted gold / wrong / refusing, English and Chinese
    case("rgb_en_gold", "rgb_accuracy", RGB_EN, "rgb/en_fact/0", "The Super Bowl was held in Tampa, Florida.", 1.0),
    case("rgb_en_wrong", "rgb_accuracy", RGB_EN, "rgb/en_fact/0", "Glendale, Arizona.", 0.0),
    case("rgb_en_insufficient", "rgb_accuracy", RGB_EN, "rgb/en_fact/0",
         "Tampa, Florida? Insufficient information in the documents.", 0.0),
    case("rgb_zh_gold", "rgb_accuracy", RGB_ZH, "rgb/zh_fact/7", "2020年中国经济增长了2.3%。", 1.0, "zh"),
    case("rgb_zh_wrong_contains_gold", "rgb_accuracy", RGB_ZH, "rgb/zh_fact/7", "增长了12.3%。", 0.0, "zh"),
    case("rgb_en_rejects", "rgb_rejection", RGB_EN, "rgb/en/1",
         "I can not answer the question because of the insufficient information in documents.", 1.0, roles=NEGATIVES),
    case("rgb_zh_rejects", "rgb_rejection", RGB_ZH, "rgb/zh/1", "文档信息不足，因此我无法基于提供的文档回答该问题。", 1.0,
         "zh", roles=NEGATIVES),
    case("rgb_en_refuses_otherwise", "rgb_rejection", RGB_EN, "rgb/en/1",
         "I cannot answer this from the provided documents.", 1.0, roles=NEGATIVES),
    case("rgb_en_answers_negatives", "rgb_rejection", RGB_EN, "rgb/en/1", "Glendale, Arizona.", 0.0, roles=NEGATIVES),
    case("rgb_rejection_na_with_support", "rgb_rejection", RGB_EN, "rgb/en/1", "Tampa, Florida", None),
    case("rgb_accuracy_na_negatives", "rgb_accuracy", RGB_EN, "rgb/en/1", "Tampa, Florida", None, roles=NEGATIVES),
    case("rgb_detects", "rgb_error_detection", RGB_EN, "rgb/en_fact/0",
         "There are factual errors in the provided documents. The correct answer is Tampa, Florida.", 1.0, roles=FAKE),
    case("rgb_zh_detects", "rgb_error_detection", RGB_ZH, "rgb/zh_fact/7", "提供文档的文档存在事实性错误。正确答案是2.3%。",
         1.0, "zh", roles=FAKE),
    case("rgb_misses_errors", "rgb_error_detection", RGB_EN, "rgb/en_fact/0", "Glendale, Arizona.", 0.0, roles=FAKE),
    case("rgb_detection_na_without_fake", "rgb_error_detection", RGB_EN, "rgb/en_fact/0", "Tampa", None),
    case("rgb_corrects", "rgb_error_correction", RGB_EN, "rgb/en_fact/0",
         "There are factual errors in the provided documents. The correct answer is Tampa, Florida.", 1.0, roles=FAKE),
    case("rgb_detects_not_corrects", "rgb_error_correction", RGB_EN, "rgb/en_fact/0",
         "There are factual errors in the provided documents. It was Glendale, Arizona.", 0.0, roles=FAKE),
    case("rgb_correction_na_undetected", "rgb_error_correction", RGB_EN, "rgb/en_fact/0", "Tampa, Florida.", None,
         roles=FAKE),
    case("rgb_integrates", "rgb_integration", RGB_INT, "rgb/zh_int/1", "香港增长6.4%，澳门增长18%。", 1.0, "zh"),
    case("rgb_integrates_half", "rgb_integration", RGB_INT, "rgb/zh_int/1", "香港增长6.4%。", 0.0, "zh"),
    case("rgb_no_1964_for_6_4", "rgb_integration", RGB_INT, "rgb/zh_int/1", "1964年和18%", 0.0, "zh"),
    case("rgb_integration_na_plain", "rgb_integration", RGB_EN, "rgb/en/1", "Tampa, Florida", None),
    case("rgb_na_elsewhere", "rgb_accuracy", RGB_EN, "ramdocs/4", "Tampa, Florida", None),
    # RAMDocs: every gold answer, no wrong answer, single-answer records included
    case("ram_gold", "ramdocs_accuracy", RAM_ONE, "ramdocs/4", "It was established in 1856.", 1.0),
    case("ram_gold_and_misinformation", "ramdocs_accuracy", RAM_ONE, "ramdocs/4", "1856, or 1900 by another source.",
         0.0),
    case("ram_wrong", "ramdocs_accuracy", RAM_ONE, "ramdocs/4", "1900", 0.0),
    case("ram_refuses", "ramdocs_accuracy", RAM_ONE, "ramdocs/4", "I cannot answer this from the documents.", 0.0),
    case("ram_all_golds", "ramdocs_accuracy", RAM_TWO, "ramdocs/m", "Released in 1987 and re-released in 1988.", 1.0),
    case("ram_one_of_two", "ramdocs_accuracy", RAM_TWO, "ramdocs/m", "1987", 0.0),
    # CRAG: correct / missing / hallucinated, score 1 / 0 / -1
    case("crag_exact", "crag_score", CRAG_REF, "crag/c3", "William Shakespeare", 1.0),
    case("crag_sentence", "crag_accuracy", CRAG_REF, "crag/c3", "It was written by William Shakespeare.", 1.0),
    case("crag_idk", "crag_score", CRAG_REF, "crag/c3", "I don't know.", 0.0),
    case("crag_idk_curly", "crag_missing", CRAG_REF, "crag/c3", "I don’t know.", 1.0),
    case("crag_wrong", "crag_score", CRAG_REF, "crag/c3", "Christopher Marlowe", -1.0),
    case("crag_wrong_hallucination", "crag_hallucination", CRAG_REF, "crag/c3", "Christopher Marlowe", 1.0),
    case("crag_refusal_is_missing", "crag_score", CRAG_REF, "crag/c3", "I cannot answer this from the documents.", 0.0),
    case("crag_fp_refusal_is_missing", "crag_missing", CRAG_FP, "crag/fp1", "I cannot answer this from the documents.",
         1.0, attributes=tuple(FP.items())),
    case("crag_unsure", "crag_score", CRAG_REF, "crag/c3", "I'm not sure, but maybe Shakespeare.", -1.0),
    case("crag_invalid_on_valid", "crag_score", CRAG_REF, "crag/c3", "Invalid question.", -1.0),
    case("crag_fp_gold", "crag_score", CRAG_FP, "crag/fp1", "invalid question", 1.0, attributes=tuple(FP.items())),
    case("crag_fp_idk_is_missing", "crag_accuracy", CRAG_FP, "crag/fp1", "I don't know.", 0.0,
         attributes=tuple(FP.items())),
    case("crag_fp_idk_score", "crag_score", CRAG_FP, "crag/fp1", "I don't know.", 0.0, attributes=tuple(FP.items())),
    case("crag_fp_accepts_premise", "crag_score", CRAG_FP, "crag/fp1", "In 1998.", -1.0, attributes=tuple(FP.items())),
    # FollowRAG: 1 / 0.5 / 0, every '/' alternative
    case("follow_first", "followrag_accuracy", FOLLOW, "followrag/ifnq/0", "It is called gravity.", 1.0),
    case("follow_second", "followrag_accuracy", FOLLOW, "followrag/ifnq/0", "Gravity, or gravitation.", 1.0),
    case("follow_wrong", "followrag_accuracy", FOLLOW, "followrag/ifnq/0", "Magnetism.", 0.0),
    case("follow_refuses", "followrag_accuracy", FOLLOW, "followrag/ifnq/0",
         "I cannot answer this from the provided documents.", 0.0),
    case("follow_number_alternative", "followrag_accuracy", FOLLOW_DATE, "followrag/ifnq/42", "In 2001.", 1.0),
    case("follow_partial", "followrag_accuracy",
         ReferenceSpec(answer_type="short", answers=[{"text": "around 9 days after ovulation"}]), "followrag/ifnq/5",
         "Around 9 days.", 0.5),
    case("follow_one_shared_word", "followrag_accuracy",
         ReferenceSpec(answer_type="short", answers=[{"text": "season two"}]), "followrag/ifnq/8", "Season five.", 0.0),
]


@pytest.mark.parametrize("c", MEASURES)
def test_benchmark_measure(c: Scored) -> None:
    item = BenchmarkItem(c.ref, c.response, c.language, c.uid, dict(c.attributes), c.roles)
    out = benchmark_metric(c.metric, item)
    if c.want is None:
        assert out.status == "not_applicable" and out.reason, out
    else:
        assert (out.status, out.value) == ("ok", c.want), out


def test_crag_false_premise_refusal_is_not_a_rejection() -> None:
    item = BenchmarkItem(CRAG_FP, "I don't know.", "en", "crag/fp1", FP)
    assert reference_metric("rejection", CRAG_FP, "I don't know.", "en").value == 1.0  # the generic rule's reading
    override = benchmark_override("rejection", item)
    assert override is not None and override.status == "not_applicable"
    assert benchmark_override("rejection", BenchmarkItem(CRAG_FP, "x", "en", "rgb/en/1", FP)) is None


SLASHES = [
    pytest.param("March 10, 2017/March 10, 2017", "The last episode aired on March 10, 2017.", 1.0, id="repeated_date"),
    pytest.param("Gravity/Gravity, or gravitation", "gravity", 1.0, id="word_alternatives"),
    pytest.param("120 km/h", "120 km", 0.0, id="unit_stays_whole"),
    pytest.param("1/2 cup", "2 cup", 0.0, id="fraction_stays_whole"),
]


@pytest.mark.parametrize(("gold", "response", "want"), SLASHES)
def test_slash_alternatives(gold: str, response: str, want: float) -> None:
    ref = ReferenceSpec(answer_type="short", answers=[{"text": gold}])
    assert reference_metric("exact_match", ref, response, "en").value == want


@dataclass(frozen=True)
class Doc:
    """A stored document as condition_bundle reads it."""

    doc_uid: str
    position: int
    role: str
    text: str = "text"
    title: str = ""
    content_type: str = "text"
    variant: dict | None = None


def bundle(uid: str, positive: list[str], negatives: int, fake: int = 0) -> list[Doc]:
    docs = [Doc(f"{uid}#{p}", i, "supporting") for i, p in enumerate(positive)]
    docs += [Doc(f"{uid}#negative[{i}]", len(docs) + i, "noise") for i in range(negatives)]
    return docs + [Doc(f"{uid}#positive_wrong[{i}]", len(docs) + i, "counterfactual") for i in range(fake)]


PLAIN_DOCS = bundle("rgb/en/1", [f"positive[{i}]" for i in range(3)], 20)
INT_DOCS = bundle("rgb/zh_int/1", ["positive[0][0]", "positive[0][1]", "positive[1][0]", "positive[1][1]",
                                   "positive[2][0]"], 20)
FACT_DOCS = bundle("rgb/en_fact/0", ["positive[0]", "positive[1]"], 20, fake=2)
MIXES = [  # (condition, documents, (answer-bearing, noise) kept) after chen700564/RGB evalue.py processdata
    pytest.param("noise_0", PLAIN_DOCS, (3, 2), id="plain_0_positives_run_short"),
    pytest.param("noise_20", PLAIN_DOCS, (3, 2), id="plain_20"),
    pytest.param("noise_40", PLAIN_DOCS, (3, 2), id="plain_40"),
    pytest.param("noise_60", PLAIN_DOCS, (2, 3), id="plain_60"),
    pytest.param("noise_80", PLAIN_DOCS, (1, 4), id="plain_80"),
    pytest.param("negatives_only", PLAIN_DOCS, (0, 5), id="plain_negatives_only"),
    pytest.param("noise_0", INT_DOCS, (5, 0), id="int_0"),
    pytest.param("noise_80", INT_DOCS, (3, 2), id="int_80_one_of_each_part"),
    pytest.param("noise_40", FACT_DOCS, (2, 3), id="fact_40_counterfactual_as_positives"),
]


@pytest.mark.parametrize(("condition", "docs", "want"), MIXES)
def test_noise_ratio_conditions(condition: str, docs: list[Doc], want: tuple[int, int]) -> None:
    settings = next(c.settings for c in REFERENCE_QA.conditions if c.name == condition)
    kept, _ = condition_bundle(docs, settings)
    roles = [d.role for d in kept]
    assert (len(roles) - roles.count("noise"), roles.count("noise")) == want
    assert "supporting" not in roles or not any(d.role == "counterfactual" for d in docs)
    if docs is INT_DOCS and condition == "noise_80":
        assert {d.doc_uid.split("#")[1][:11] for d in kept if d.role != "noise"} == {
            "positive[0]", "positive[1]", "positive[2]"}


STORED = [  # (uid, reference, attributes, prompt roles, response, {metric: value or None for not applicable})
    ("rgb/en_fact/0", RGB_EN, {}, FAKE,
     "There are factual errors in the provided documents. The correct answer is Tampa, Florida.",
     {"rgb_accuracy": 1.0, "rgb_error_detection": 1.0, "rgb_error_correction": 1.0, "rgb_rejection": None}),
    ("rgb/zh/1", RGB_ZH, {}, NEGATIVES, "文档信息不足，因此我无法基于提供的文档回答该问题。",
     {"rgb_rejection": 1.0, "rgb_accuracy": None}),
    ("ramdocs/4", RAM_ONE, {}, PLAIN, "1856, though one document says 1900.",
     {"ramdocs_accuracy": 0.0, "exact_match": 1.0}),
    ("crag/fp1", CRAG_FP, FP, PLAIN, "I don't know.",
     {"crag_score": 0.0, "crag_missing": 1.0, "crag_accuracy": 0.0, "rejection": None}),
    ("followrag/ifnq/42", FOLLOW_DATE, {}, PLAIN, "2001", {"followrag_accuracy": 1.0}),
]


def test_score_run_stores_each_benchmarks_measures(engine: Engine) -> None:
    with Session(engine) as s:
        dom_id, models, run_id = seed_run(s, "General", ("m",), "bench")
        response_ids = {}
        for uid, ref, attributes, roles, text, _ in STORED:
            inst = Instance(uid=uid, domain_id=dom_id, query="q", protocol="reference_qa", language=
                            "zh" if "/zh" in uid else "en", reference=ref.model_dump(), attributes=attributes)
            s.add(inst)
            s.flush()
            resp = Response(run_id=run_id, model_id=models["m"], instance_id=inst.id, condition="", status="done",
                            text=text, latency_ms=1.0, prompt_meta={"doc_roles": list(roles)})
            s.add(resp)
            s.flush()
            response_ids[uid] = resp.id
        s.commit()
    asyncio.run(score_run(engine, run_id, "heuristic"))
    with Session(engine) as s:
        verdicts = {(v.response_id, v.metric): v for v in s.exec(select(Verdict).where(Verdict.run_id == run_id))}
    for uid, _, _, _, _, want in STORED:
        rid = response_ids[uid]
        for metric, value in want.items():
            v = verdicts[(rid, metric)]
            assert (v.status, v.value) == (("not_applicable", None) if value is None else ("ok", value)), (uid, metric)
        others = {m for (r, m) in verdicts if r == rid and m.split("_")[0] in ("rgb", "ramdocs", "crag", "followrag")}
        assert {m.split("_")[0] for m in others} == {uid.split("/")[0]}, (uid, others)
