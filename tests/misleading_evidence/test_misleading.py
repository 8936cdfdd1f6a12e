"""The misleading-evidence generator: on every item of the shared slices, clean and misleading evidence at the same
position differ in exactly one span, inside one sentence, holding the designated wrong answer; items without a safe
edit are listed with a reason; the build is deterministic; the optional LLM edit is checked before it is kept."""

from __future__ import annotations

import json
import os
from itertools import pairwise

import pytest

from core.protocols import protocol_errors
from core.protocols.misleading_evidence import POSITIONS
from core.protocols.misleading_evidence.builder import (
    Edit,
    Evidence,
    NoSafeEdit,
    Plan,
    describe,
    llm_edit,
    numeric_shape,
    one_span_diff,
    question_kind,
)
from core.protocols.misleading_evidence.builder_plans import build_stress, plan_for
from core.scoring.reference import contains, normalize, scheme_for
from core.store.schema import InstanceSpec
from tests.misleading_evidence.conftest import source_specs

BUILDS: dict[str, object] = {}


def built(name: str):
    if name not in BUILDS:
        BUILDS[name] = (source_specs(name), build_stress(source_specs(name), seed=0))
    return BUILDS[name]


def differing_span(a: str, b: str) -> tuple[int, int, int]:
    """(start, end in a, end in b) of the one region where two texts differ (common prefix and suffix removed)."""
    start = len(os.path.commonprefix([a, b]))
    tail = len(os.path.commonprefix([a[start:][::-1], b[start:][::-1]]))
    return start, len(a) - tail, len(b) - tail


def gold_sentences(spec: InstanceSpec) -> list[str]:
    """The evidence sentences a HotpotQA item should have: its gold paragraphs' sentences, straight from the source."""
    out = []
    for doc in spec.documents:
        if doc.role == "supporting":
            cuts = [*doc.variant["sentence_offsets"], len(doc.text)]
            out += [doc.text[a:b].strip() for a, b in pairwise(cuts) if doc.text[a:b].strip()]
    return out


def check_one_edit(source: InstanceSpec, stress: InstanceSpec) -> None:
    """Every assertion of the acceptance criterion on one built instance."""
    kind = scheme_for(stress.language, stress.reference).kind
    docs = {d.variant.get("position") or "clean": d for d in stress.documents}
    clean_doc = docs["clean"]
    edit = clean_doc.variant["edit"]
    wrong = stress.reference.wrong_answers[0]
    gold = source.reference.choices[source.reference.answer_key] if source.reference.answer_type == "mcq" \
        else source.reference.answers[0].text
    # a comparison or yes/no edit moves the deciding year or word; the wrong answer is the other entity or 'no'
    flip = stress.metadata["rag_stress"]["entity_type"].startswith(("comparison", "yes/no"))
    assert clean_doc.text[edit["start"]:edit["end"]] == edit["before"] and (flip or gold in edit["before"])
    assert flip or not contains(normalize(clean_doc.text, kind), normalize(wrong, kind), kind) or \
        source.reference.answer_type == "mcq"
    if source.documents:
        assert clean_doc.text == " ".join(gold_sentences(source))
    sentence = clean_doc.text[edit["sentence_start"]:edit["sentence_end"]]
    rest = clean_doc.text[:edit["sentence_start"]] + clean_doc.text[edit["sentence_end"]:]
    for position in POSITIONS:
        doc = docs[position]
        record = doc.variant["edit"]
        edited = doc.text[record["sentence_start"]:record["sentence_end"]]
        # the edited sentence stands first / in the middle / last, and the rest of the evidence is untouched
        others = doc.text[:record["sentence_start"]] + doc.text[record["sentence_end"]:]
        assert sorted(others.split()) == sorted(rest.split())
        if position == "beginning":
            assert record["sentence_start"] == 0
        if position == "end":
            assert record["sentence_end"] == len(doc.text)
        # clean at the same position = the misleading text with the clean sentence put back: one span differs
        clean_here = doc.text[:record["sentence_start"]] + sentence + doc.text[record["sentence_end"]:]
        start, clean_end, edited_end = differing_span(clean_here, doc.text)
        assert record["sentence_start"] <= start <= edited_end <= record["sentence_end"]
        assert record["start"] <= start and edited_end <= record["end"]
        assert doc.text[record["start"]:record["end"]] == record["after"]
        assert record["after"] != record["before"] if flip else \
            contains(normalize(record["after"], kind), normalize(wrong, kind), kind)
        assert differing_span(sentence, edited)[0] == start - record["sentence_start"]


@pytest.mark.parametrize(("name", "total", "least_built"), [
    pytest.param("hotpotqa", 500, 235, id="hotpotqa-500"),  # 258 before issue 43 skipped gold-said-again items
    pytest.param("medqa-us", 500, 495, id="medqa-us-500"),
    pytest.param("medqa-zh", 150, 145, id="medqa-mainland-zh-150"),
])
def test_every_item_gets_one_edit_or_a_reason(name: str, total: int, least_built: int) -> None:
    sources, result = built(name)
    by_id = {s.id: s for s in sources}
    assert len(sources) == total
    assert len(result.instances) + len(result.skipped) == total
    assert {s.id for s in result.skipped}.isdisjoint(i.metadata["rag_stress"]["source_id"] for i in result.instances)
    assert all(s.reason for s in result.skipped)
    assert len(result.instances) >= least_built
    for stress in result.instances:
        assert protocol_errors(stress) == []
        check_one_edit(by_id[stress.metadata["rag_stress"]["source_id"]], stress)


def test_build_is_deterministic_and_seeded() -> None:
    sources = source_specs("medqa-us")[:60]
    first, again = build_stress(sources, seed=3), build_stress(sources, seed=3)
    other = build_stress(sources, seed=4)
    dump = lambda b: [s.model_dump_json() for s in b.instances]  # noqa: E731
    assert dump(first) == dump(again)
    assert [s.metadata["rag_stress"]["wrong_key"] for s in first.instances] != \
        [s.metadata["rag_stress"]["wrong_key"] for s in other.instances]
    shuffled = build_stress(list(reversed(sources)), seed=3)
    assert sorted(dump(shuffled)) == sorted(dump(first))


def test_question_and_reference_stay_fixed() -> None:
    sources, result = built("hotpotqa")
    by_id = {s.id: s for s in sources}
    for stress in result.instances[:50]:
        source = by_id[stress.metadata["rag_stress"]["source_id"]]
        assert stress.query == source.query and stress.protocol == "misleading_evidence"
        assert stress.reference.answers == source.reference.answers
        assert stress.reference.wrong_answers[0] == stress.metadata["rag_stress"]["wrong_answer"]


@pytest.mark.parametrize(("sentences", "answer", "position", "expected"), [
    pytest.param(("a.", "b.", "c.", "d."), 2, None, "a. b. c. d.", id="natural"),
    pytest.param(("a.", "b.", "c.", "d."), 2, "beginning", "c. a. b. d.", id="beginning"),
    pytest.param(("a.", "b.", "c.", "d."), 0, "middle", "b. a. c. d.", id="middle-of-four"),
    pytest.param(("a.", "b.", "c.", "d.", "e."), 0, "middle", "b. c. a. d. e.", id="middle-of-five"),
    pytest.param(("a.", "b.", "c."), 0, "end", "b. c. a.", id="end"),
    pytest.param(("a.",), 0, "middle", "a.", id="single-sentence"),
])
def test_evidence_places_the_answer_sentence(sentences, answer, position, expected) -> None:
    evidence = Evidence(sentences, answer)
    assert evidence.text(position) == expected
    start = evidence.sentence_start(position)
    assert evidence.text(position)[start:start + len(sentences[answer])] == sentences[answer]


@pytest.mark.parametrize(("answer", "shape", "core"), [
    pytest.param("10 October 2010", "date", "10 October 2010", id="day-month-year"),
    pytest.param("January 16, 2013", "date", "January 16, 2013", id="month-day-year"),
    pytest.param("in 1994", "year", "1994", id="year-with-preposition"),
    pytest.param("265,000", "number", "265,000", id="thousands"),
    pytest.param("just over 1 million", "number", "1", id="number-in-phrase"),
    pytest.param("8th", "ordinal", "8th", id="ordinal"),
    pytest.param("2000 Summer Olympic Games", None, None, id="name-with-a-year"),
    pytest.param("Hills", None, None, id="no-digits"),
])
def test_numeric_shapes(answer, shape, core) -> None:
    found = numeric_shape(answer)
    if shape is None:
        assert found is None
    else:
        assert (found[0], found[2].group(0)) == (shape, core)


def test_several_figures_have_no_safe_edit() -> None:
    with pytest.raises(NoSafeEdit, match="several figures"):
        numeric_shape("from 1847 until 1980")


@pytest.mark.parametrize(("text", "kind"), [
    pytest.param("Abel Tesfaye (born February 16 1990), known as The Weeknd, is a Canadian singer.", "person", id="born"),
    pytest.param("Tom Jones (7 June 1940 – 1 May 2000) was a Welsh politician.", "person", id="life-dates"),
    pytest.param("Sex Drive is a 2008 American teen sex comedy film directed by Sean Anders.", "work", id="film"),
    pytest.param("Preston County is a county located in the U.S. state of West Virginia.", "place", id="county"),
    pytest.param("Berklee College of Music is a private music college in Boston.", "organisation", id="college"),
    pytest.param("The Scanian War was a part of the Northern Wars.", "event", id="war"),
    pytest.param("The discography of the singer consists of ten albums.", None, id="no-copula-cue"),
])
def test_describe_paragraph_kinds(text, kind) -> None:
    assert describe(text) == kind


@pytest.mark.parametrize(("question", "kind"), [
    pytest.param("Who was the vizier of Ebla?", "person", id="who"),
    pytest.param("Where is the magazine headquartered?", "place", id="where"),
    pytest.param("Deckers Creek begins in what West Virginia county?", "place", id="what-county"),
    pytest.param("What music school did the singer attend?", "organisation", id="what-school"),
    pytest.param("What kind of comedian was his father?", None, id="kind-of"),
    pytest.param("What is the nationality of the actor?", None, id="nationality"),
])
def test_question_kinds(question, kind) -> None:
    assert question_kind(question) == kind


def _hotpot(answer: str, question: str, qtype: str = "bridge") -> InstanceSpec:
    gold = f"Alpha Beta is a town. It lies near {answer} today."
    return InstanceSpec.model_validate({
        "id": "t/1", "domain": "T", "query": question, "protocol": "reference_qa", "language": "en",
        "reference": {"answer_type": "short", "answers": [{"text": answer}]},
        "attributes": {"question_type": qtype},
        "documents": [
            {"doc_id": "g", "title": "Alpha Beta", "text": gold, "role": "supporting",
             "variant": {"sentence_offsets": [0, 21], "supporting_sentences": [1]}},
            {"doc_id": "n1", "title": "Gamma Town", "text": "Gamma Town is a town in Kent. It was founded in 1844.",
             "role": "noise", "variant": {"sentence_offsets": [0, 29]}},
            {"doc_id": "n2", "title": "Jane Roe", "text": "Jane Roe (born 1950) is an English singer.",
             "role": "noise", "variant": {"sentence_offsets": [0]}}]})


@pytest.mark.parametrize(("answer", "question", "qtype", "wrong", "reason"), [
    pytest.param("Delta Town", "Which town is Alpha Beta near?", "bridge", "Gamma Town", None, id="same-type-title"),
    pytest.param("1901", "In what year was it founded?", "bridge", "1844", None, id="year-from-distractor-text"),
    pytest.param("Jim Doe", "Who lives near Alpha Beta?", "bridge", "Jane Roe", None, id="person"),
    pytest.param("yes", "Is it a town?", "comparison", None, "yes/no answer not decided", id="yes-no"),
    pytest.param("Delta Town", "Which is bigger, X or Y?", "comparison", None, "comparison question not decided",
                 id="comparison"),
    pytest.param("Delta Town and Epsilon", "Which towns?", "bridge", None, "list answer", id="list"),
    pytest.param("the river", "What is near?", "bridge", None, "not a named entity", id="lower-case"),
    pytest.param("Zeta Award", "Which award?", "bridge", None, "no same-type entity", id="no-candidate"),
])
def test_open_qa_edits_and_reasons(answer, question, qtype, wrong, reason) -> None:
    spec = _hotpot(answer, question, qtype)
    if reason:
        with pytest.raises(NoSafeEdit, match=reason):
            plan_for(spec)
        return
    plan = plan_for(spec)
    assert plan.wrong_answer == wrong and plan.edit.before == answer
    assert plan.misleading.text() == plan.evidence.text().replace(answer, wrong)


def _mcq(choices: dict[str, str], key: str, question: str, language: str = "en") -> InstanceSpec:
    return InstanceSpec.model_validate({
        "id": "m/1", "domain": "MedQA", "query": question, "protocol": "reference_qa", "language": language,
        "reference": {"answer_type": "mcq", "choices": choices, "answer_key": key,
                      "answers": [{"text": choices[key]}]}})


@pytest.mark.parametrize(("choices", "key", "allowed"), [
    pytest.param({"A": "Aspirin", "B": "Heparin", "C": "Warfarin"}, "A", {"B", "C"}, id="any-other"),
    pytest.param({"A": "Metformin", "B": "Metformin and insulin", "C": "Insulin"}, "C", set(), id="overlapping-texts"),
    pytest.param({"A": "Aspirin", "B": "All of the above", "C": "Warfarin"}, "A", {"C"}, id="meta-option"),
])
def test_mcq_wrong_option_is_distinct(choices, key, allowed) -> None:
    spec = _mcq(choices, key, "A man has chest pain. Which drug is best?")
    if not allowed:
        with pytest.raises(NoSafeEdit, match="no wrong option"):
            plan_for(spec)
        return
    plan = plan_for(spec)
    assert plan.wrong_key in allowed and plan.wrong_answer == choices[plan.wrong_key]
    assert plan.evidence.sentences[1] == "A man has chest pain."
    assert plan.evidence.sentences[-1] == f"For this case, the correct answer is {choices[key]}."


def test_mcq_chinese_note() -> None:
    spec = _mcq({"A": "2小时", "B": "4小时内", "C": "8小时内"}, "C", "男性，45岁。应首先考虑的诊断是（　　）。", "zh")
    plan = plan_for(spec)
    assert plan.evidence.joiner == "" and plan.evidence.sentences[1] == "男性，45岁。"
    assert plan.misleading.sentences[-1] == f"本题的正确答案是{plan.wrong_answer}。"


PLAN = Plan(Evidence(("It was built in Leeds.", "It is old."), 0), Edit(16, "Leeds", "York"), "York", ("York",))


@pytest.mark.parametrize(("reply", "sentence", "rejected"), [
    pytest.param({"sentence": "It was built in the city of York."}, "It was built in the city of York.", None,
                 id="accepted"),
    pytest.param({"sentence": "It was built in Leeds, not York."}, None, "does not swap", id="keeps-gold"),
    pytest.param({"sentence": "It was built in Hull."}, None, "does not swap", id="other-answer"),
    pytest.param({"answer": "York"}, None, "no single rewritten sentence", id="no-sentence"),
    pytest.param({"sentence": "Line one York.\nLine two."}, None, "no single rewritten sentence", id="two-lines"),
    pytest.param(RuntimeError("boom"), None, "call failed: RuntimeError", id="call-fails"),
])
def test_llm_edit_is_checked(reply, sentence, rejected) -> None:
    def complete_json(prompt: str) -> dict:
        assert "Leeds" in prompt and "York" in prompt
        if isinstance(reply, Exception):
            raise reply
        return reply

    plan, why = llm_edit(PLAN, complete_json, "llm:fake")
    if rejected:
        assert rejected in why and plan == PLAN
        return
    assert why is None and plan.edit.method == "llm:fake"
    assert plan.misleading.sentences[0] == sentence and plan.misleading.sentences[1] == "It is old."
    assert (plan.edit.before, plan.edit.after) == ("Leeds", "the city of York")


def test_build_with_llm_counts_kept_and_rejected_edits() -> None:
    sources = source_specs("medqa-us")[:6]
    calls = []

    def complete_json(prompt: str) -> dict:
        calls.append(prompt)
        return {"sentence": "nothing useful"} if len(calls) % 2 else {}

    result = build_stress(sources, seed=0, complete_json=complete_json, llm_name="fake")
    assert len(calls) == len(result.instances) == 6 and result.llm_edits == 0
    assert len(result.llm_rejected) == 6
    assert all(i.metadata["rag_stress"]["method"] == "rule" for i in result.instances)
    assert json.loads(json.dumps(result.to_dict()))["llm_rejected"][0]["reason"]


def _pair(question: str, answer: str, first: str, second: str, qtype: str = "comparison") -> InstanceSpec:
    """A two-entity HotpotQA-style item: Ann Lee's and Bob Ray's one-sentence paragraphs, both supporting."""
    return InstanceSpec.model_validate({
        "id": "t/2", "domain": "T", "query": question, "protocol": "reference_qa", "language": "en",
        "reference": {"answer_type": "short", "answers": [{"text": answer}]},
        "attributes": {"question_type": qtype},
        "documents": [{"doc_id": f"g{i}", "title": title, "text": text, "role": "supporting",
                       "variant": {"sentence_offsets": [0], "supporting_sentences": [0]}}
                      for i, (title, text) in enumerate((("Ann Lee", first), ("Bob Ray", second)))]})


ANN = "Ann Lee (3 May 1920 – 1 June 1990) was an English poet."
BOB = "Bob Ray (born 1941) is an American singer and musician."


@pytest.mark.parametrize(("question", "answer", "first", "second", "wrong", "before", "after", "reason"), [
    # Ann (1920) was born first; her year moves 1-5 years past Bob's (1941), still before her death (1990).
    pytest.param("Who was born first, Ann Lee or Bob Ray?", "Ann Lee", ANN, BOB, "Bob Ray", "1920", range(1942, 1947),
                 None, id="comparison-year-earlier"),
    # Bob (1941) was born later; his year moves to 1915-1919, before Ann's 1920.
    pytest.param("Who was born later, Ann Lee or Bob Ray?", "Bob Ray", ANN, BOB, "Ann Lee", "1941", range(1915, 1920),
                 None, id="comparison-year-later"),
    pytest.param("Who died first, Ann Lee or Bob Ray?", "Ann Lee", ANN, BOB, None, None, None,
                 "not decided by one year", id="comparison-death-skipped"),
    pytest.param("Who was born first, Ann Lee or Bob Ray?", "Ann Lee", ANN, "Bob Ray is a singer.", None, None, None,
                 "no year", id="comparison-no-year"),
    pytest.param("Who was born first, Ann Lee or Bob Ray?", "Cy Doe", ANN, BOB, None, None, None,
                 "not one of its two entities", id="comparison-answer-not-an-entity"),
    # yes: Bob's 'musician' becomes another occupation, so that sentence alone says 'no'.
    pytest.param("Are Ann Lee and Bob Ray both musicians?", "yes", "Ann Lee is an English musician.", BOB, "no",
                 "musician", None, None, id="yes-no-occupation"),
    pytest.param("Are Ann Lee and Bob Ray both musicians?", "no", ANN, BOB, None, None, None,
                 "not decided by one occupation", id="yes-no-answered-no-skipped"),
    pytest.param("Are Ann Lee and Bob Ray both from England?", "yes", ANN, BOB, None, None, None,
                 "not decided by one occupation", id="yes-no-not-an-occupation"),
])
def test_comparison_and_yes_no_edits(question, answer, first, second, wrong, before, after, reason) -> None:
    spec = _pair(question, answer, first, second)
    if reason:
        with pytest.raises(NoSafeEdit, match=reason):
            plan_for(spec)
        return
    plan = plan_for(spec)
    assert plan.wrong_answer == wrong and plan.edit.before == before and plan.wrong_forms == (wrong,)
    if after is not None:
        assert int(plan.edit.after) in after
    else:
        assert plan.edit.after != before and plan.edit.after not in question
    clean, misleading = plan.evidence.text(), plan.misleading.text()
    start, end, _ = one_span_diff(clean, misleading)
    assert clean[start:end] in before and len(misleading) - len(clean) == len(plan.edit.after) - len(before)
