"""HotpotQA edit rules for answers that are neither names nor figures: 'City, Region' places ('Boston,
Massachusetts'), lower-case words of a closed kind (a sport, a compass direction, a relative, a position, an office,
a cooking method, a genre), and the coverage they add on the shared slice."""

from __future__ import annotations

import pytest

from core.protocols.misleading_evidence.builder import NoSafeEdit, one_span_diff
from core.protocols.misleading_evidence.builder_plans import build_stress, plan_for
from core.store.schema import InstanceSpec
from tests.misleading_evidence.conftest import source_specs


def _item(question: str, answer: str, gold: list[str], noise: list[str] = ()) -> InstanceSpec:
    """A HotpotQA-style bridge item: one-sentence paragraphs, the gold ones supporting, the noise ones distractors."""
    docs = [{"doc_id": f"g{i}", "title": f"Gold {i}", "text": text, "role": "supporting",
             "variant": {"sentence_offsets": [0], "supporting_sentences": [0]}} for i, text in enumerate(gold)]
    docs += [{"doc_id": f"n{i}", "title": f"Noise {i}", "text": text, "role": "noise",
              "variant": {"sentence_offsets": [0]}} for i, text in enumerate(noise)]
    return InstanceSpec.model_validate({
        "id": "t/kinds", "domain": "T", "query": question, "protocol": "reference_qa", "language": "en",
        "reference": {"answer_type": "short", "answers": [{"text": answer}]},
        "attributes": {"question_type": "bridge"}, "documents": docs})


FIRM = "Alpha Capital is an investment firm based in {answer}."
OHIO = "Gamma Corp is a company headquartered in Maumee, Ohio."
TEXAS = "Delta Inc is a retailer based in Austin, Texas."
SEAT = "Tupelo is the county seat of {answer}."


@pytest.mark.parametrize(("question", "answer", "gold", "noise", "wrong", "before", "reason"), [
    pytest.param("Where is the firm based?", "Boston, Massachusetts", [FIRM], [OHIO], {"Maumee, Ohio"},
                 "Boston, Massachusetts", None, id="city-state-from-distractor-text"),
    pytest.param("Where is the firm based?", "Boston, Massachusetts", [FIRM],
                 [OHIO, "Beta is a college located in Worcester, Massachusetts."], {"Worcester, Massachusetts"},
                 "Boston, Massachusetts", None, id="same-region-preferred"),
    pytest.param("Of what county is Tupelo the seat?", "Lee County, Mississippi", [SEAT],
                 [TEXAS, "Altoona is a city in Blair County, Pennsylvania."], {"Blair County, Pennsylvania"},
                 "Lee County, Mississippi", None, id="county-for-county"),
    pytest.param("Of what county is Tupelo the seat?", "Lee County, Mississippi", [SEAT], [TEXAS], None, None,
                 "(place in a region)", id="city-never-stands-for-county"),
    pytest.param("Where is the firm based?", "Midland, Michigan, United States", [FIRM],
                 ["Eta is a drug company headquartered in Indianapolis, Indiana."],
                 {"Indianapolis, Indiana, United States"}, "Midland, Michigan, United States", None, id="three-parts-city-state-edited"),
    pytest.param("Where is the firm based?", "Boston, Massachusetts",
                 [FIRM, "Its founders met at Boston College."], [OHIO], None, None, "named elsewhere",
                 id="place-named-elsewhere-refused"),
    pytest.param("Where is the firm based?", "Boston, Massachusetts", [FIRM],
                 ["Moscow, Russia is far away.", "The firm, Texas Instruments, is large."], None, None,
                 "(place in a region)", id="no-name-after-a-lower-case-word"),
])
def test_place_in_region(question, answer, gold, noise, wrong, before, reason) -> None:
    spec = _item(question, answer, [text.format(answer=answer) for text in gold], noise)
    if reason:
        with pytest.raises(NoSafeEdit, match=reason.replace("(", r"\(").replace(")", r"\)")):
            plan_for(spec)
        return
    _assert_one_edit(spec, wrong, before)


WORKED = "He was a filmmaker who worked in Spain, Mexico and France."


@pytest.mark.parametrize(("question", "gold", "noise", "wrong", "reason"), [
    pytest.param("In what countries did he work?", [WORKED], [OHIO, "Zeta is a film shot in Peru."],
                 {"Spain, Mexico and Peru"}, None, id="last-country-from-distractor-text"),
    pytest.param("In what countries did he work?", [WORKED, "He died in France."], [OHIO], None,
                 "the country is stated elsewhere", id="last-country-stated-twice-refused"),
])
def test_country_list(question, gold, noise, wrong, reason) -> None:
    spec = _item(question, "Spain, Mexico and France", gold, noise)
    if reason:
        with pytest.raises(NoSafeEdit, match=reason):
            plan_for(spec)
        return
    _assert_one_edit(spec, wrong, "Spain, Mexico and France")


MALE = {"grandfather", "brother", "nephew", "cousin"}


@pytest.mark.parametrize(("question", "answer", "gold", "wrong", "before", "reason"), [
    pytest.param("What is his relation to Ann?", "uncle", ["He trained under his uncle Jim Roe."], MALE, "uncle",
                 None, id="relative-same-gender-never-great-uncle"),
    pytest.param("What was his position at the firm?", "president", ["He is the former president of Alpha."],
                 {"chairman", "treasurer", "chief operating officer", "chief financial officer", "managing director"},
                 "president", None, id="office-never-vice-president"),
    pytest.param("In what part of Argentina is it?", "north", ["It is a province in the north of Argentina."],
                 {"south", "east", "west", "northeast", "northwest", "southeast", "southwest"}, "north", None,
                 id="compass-direction"),
    pytest.param("What sport does he play?", "ice hockey", ["He is an ice hockey centre for Chicago."],
                 {"field hockey", "basketball", "baseball", "soccer", "tennis", "golf", "cricket", "rugby",
                  "volleyball", "lacrosse", "handball"}, "an ice hockey", None, id="sport-article-follows"),
    pytest.param("What genre does she write?", "romance genre", ["She is a novelist who writes in the romance genre."],
                 {"fantasy genre", "mystery genre", "horror genre", "science fiction genre", "thriller genre",
                  "western genre"}, "romance genre", None, id="genre-with-its-noun"),
    pytest.param("What part did he play?", "goalkeeper", ["He was a goalkeeper, then a striker."],
                 {"defender", "midfielder", "winger"}, "a goalkeeper", None, id="kind-words-in-the-evidence-avoided"),
    pytest.param("What role did he play?", "a priest", ["He had a small part in the film as a priest."],
                 {"a vicar", "a rabbi", "a monk", "a bishop", "an imam"}, "a priest", None,
                 id="article-inside-the-answer-follows"),
    pytest.param("What was his sentence?", "ten years of probation", ["He was sentenced to ten years of probation."],
                 {f"{n} years of probation" for n in ("two", "three", "four", "five", "six", "seven", "eight", "nine",
                                                      "eleven", "twelve")}, "ten years of probation", None,
                 id="number-word-before-its-noun"),
    pytest.param("The ballad has a prominent what?", "dream pop influence",
                 ["It is a love ballad with a prominent dream pop influence."],
                 {f"{g} influence" for g in ("shoegaze", "synth-pop", "indie pop", "trip hop", "electropop",
                                             "art rock")}, "dream pop influence", None, id="music-genre-influence"),
    pytest.param("What does the chain specialize in?", "hamburgers", ["Wendy's is a chain specializing in hamburgers."],
                 {"pizza", "fried chicken", "tacos", "hot dogs", "sandwiches", "doughnuts"}, "hamburgers", None,
                 id="fast-food"),
    pytest.param("In what part of Argentina is it?", "north",
                 ["It is a province in the north of Argentina.", "Salta lies to its north."], None, None,
                 "compass direction is stated elsewhere", id="stated-twice-refused"),
])
def test_closed_kind_words(question, answer, gold, wrong, before, reason) -> None:
    spec = _item(question, answer, gold, ["Zeta is a 1990 film."])
    if reason:
        with pytest.raises(NoSafeEdit, match=reason):
            plan_for(spec)
        return
    _assert_one_edit(spec, wrong, before)


@pytest.mark.parametrize(("answer", "gold", "question", "guarded"), [
    pytest.param("basketball", "Ann Lee plays basketball for Alpha.", "What sport does Ann Lee play?",
                 "What sport do Ann Lee and Alpha have in common?", id="in-common-question-refused"),
    pytest.param("Boston, Massachusetts", FIRM, "Where is the firm based?",
                 "Where is the firm, not the Maumee one, based?", id="replacement-named-in-question-refused"),
    pytest.param("Spain, Mexico and France", WORKED, "In what countries did he work?",
                 "In what countries did both he and Ann work?", id="country-list-both-question-refused"),
])
def test_guard_refuses_an_item_that_builds_otherwise(answer, gold, question, guarded) -> None:
    gold_text = [gold.format(answer=answer)]
    assert plan_for(_item(question, answer, gold_text, [OHIO])).wrong_answer
    with pytest.raises(NoSafeEdit):
        plan_for(_item(guarded, answer, gold_text, [OHIO]))


def _assert_one_edit(spec: InstanceSpec, wrong: set[str], before: str) -> None:
    """The wrong answer is one of `wrong`, the edit replaces `before`, and the evidence differs in that one span,
    the edited sentence stating the wrong answer."""
    plan = plan_for(spec)
    assert plan.wrong_answer in wrong and plan.edit.before == before
    clean, misleading = plan.evidence.text(), plan.misleading.text()
    start, end, new_end = one_span_diff(clean, misleading)
    assert clean[start:end] in before and misleading[start:new_end] in plan.edit.after
    assert plan.wrong_answer.split(", ")[0] in plan.misleading.sentences[plan.misleading.answer]


def test_hotpotqa_coverage_with_place_and_kind_rules() -> None:
    result = build_stress(source_specs("hotpotqa"), seed=0)
    assert len(result.instances) >= 235  # issue 43: gold stated again -> skipped
