"""The HotpotQA edit rules beyond entity spans and years: broader typing of open answers (person questions, closed
lists of nationalities and countries, people credited in distractor sentences), yes/no questions about a nationality,
continent or US state, comparisons decided by one figure, and the coverage they reach on the shared slice."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from core.protocols.misleading_evidence.builder import MONTHS, NoSafeEdit, one_span_diff, question_kind
from core.protocols.misleading_evidence.builder_plans import build_stress, plan_for
from core.store.schema import InstanceSpec
from tests.misleading_evidence.conftest import source_specs


def _item(question: str, answer: str, gold: list[tuple[str, str]], noise: list[tuple[str, str]] = (),
          qtype: str = "bridge") -> InstanceSpec:
    """A HotpotQA-style item: one-sentence paragraphs, the gold ones supporting, the noise ones distractors."""
    docs = [{"doc_id": f"g{i}", "title": title, "text": text, "role": "supporting",
             "variant": {"sentence_offsets": [0], "supporting_sentences": [0]}} for i, (title, text) in enumerate(gold)]
    docs += [{"doc_id": f"n{i}", "title": title, "text": text, "role": "noise", "variant": {"sentence_offsets": [0]}}
             for i, (title, text) in enumerate(noise)]
    return InstanceSpec.model_validate({
        "id": "t/3", "domain": "T", "query": question, "protocol": "reference_qa", "language": "en",
        "reference": {"answer_type": "short", "answers": [{"text": answer}]},
        "attributes": {"question_type": qtype}, "documents": docs})


def _assert_one_edit(spec: InstanceSpec, wrong: str, before: str, after: object) -> None:
    """The plan's wrong answer and edit, and clean and misleading evidence differing in that one span."""
    plan = plan_for(spec)
    assert plan.wrong_answer == wrong and plan.edit.before == before
    assert plan.edit.after in after if isinstance(after, (list, tuple, set)) else plan.edit.after == after
    clean, misleading = plan.evidence.text(), plan.misleading.text()
    start, end, new_end = one_span_diff(clean, misleading)
    assert clean[start:end] in before and misleading[start:new_end] in plan.edit.after


@pytest.mark.parametrize(("question", "kind"), [
    pytest.param("After his suspension in 2014, who won the seat?", "person", id="who-after-a-comma"),
    pytest.param("The election ended in a loss for which attorney and CNN contributor?", "person",
                 id="which-attorney"),
    pytest.param("The essay is by what English essayist best known for his memoir?", "person", id="what-essayist"),
    pytest.param("Lean on Pete stars the actor best known for playing what role in Granite Flats?", "person",
                 id="what-role"),
    pytest.param("He gained fame by starring in whose series of films?", "person", id="whose"),
    pytest.param("Which MTV show was hosted by a member of the crew?", "work", id="which-show"),
    pytest.param("What speech by Abraham Lincoln was part of the history?", "work", id="what-speech"),
    pytest.param("Moonlight starred the actor who played whom on the remake?", "person", id="whom"),
    pytest.param("What is the name of the field marshal behind the plan?", "person", id="name-of-the-marshal"),
    pytest.param("The English chef has a sister named what?", "person", id="sister-named-what"),
    pytest.param("He plays for a team in the autonomous community of what?", "place", id="community-of-what"),
])
def test_person_questions(question, kind) -> None:
    assert question_kind(question) == kind


TOWN = ("Alpha Beta", "Alpha Beta is a town near {answer} today.")
SINGER = ("Jane Roe", "Jane Roe (born 1950) is an English singer who toured France.")


@pytest.mark.parametrize(("question", "answer", "gold", "noise", "wrong", "reason"), [
    # the article follows the new word: 'a Dutch sailor' -> 'an English sailor'
    pytest.param("Of what nationality is its founder?", "Dutch", [("Alpha Beta", "Its founder was a Dutch sailor.")],
                 [SINGER], "English", None, id="nationality-from-distractor-text"),
    pytest.param("What is it near?", "Ghana", [TOWN], [SINGER], "France", None, id="country-from-distractor-text"),
    pytest.param("When did he say it?", "April", [("Alpha Beta", "In 2012 he said that by April it would be done.")],
                 [SINGER], set(MONTHS.split("|")) - {"April"}, None, id="month-from-the-list"),
    # no count of that shape among the distractors ('1950' is a year): the count scaled, written alike
    pytest.param("How many copies did it sell?", "250 million", [("Alpha Beta", "It sold 250 million copies.")],
                 [SINGER], {f"{n} million" for n in (125, 150, 188, 325, 375, 500)}, None, id="count-scaled"),
    pytest.param("What country is it in?", "Ghana", [("Alpha Beta", "Alpha Beta is a town in Accra, Ghana.")],
                 [SINGER], None, "follows a place inside it", id="country-after-its-city-refused"),
    pytest.param("Of what nationality is its founder?", "Dutch",
                 [("Alpha Beta", "Its founder was a Dutch sailor."), ("Gamma", "He sailed a Dutch ship.")], [SINGER], None,
                 "stated elsewhere", id="nationality-stated-twice"),
    pytest.param("Of what nationality is its founder?", "Dutch", [("Alpha Beta", "Its founder was Dutchman Jan.")],
                 [SINGER], None, "inside a longer word", id="nationality-inside-a-word"),
    pytest.param("Who lives near Alpha Beta?", "Jim Doe", [TOWN], [("Gamma", "Gamma is a 1990 film directed by "
                                                                   "Ann Smith, with music by Bo Lund.")],
                 "Ann Smith", None, id="person-credited-in-distractor"),
    pytest.param("Who lives near Alpha Beta?", "Jim Doe", [TOWN], [("Gamma", "Gamma is a film produced by "
                                                                   "Professor Ann Smith, directed by Bo Lund.")],
                 "Bo Lund", None, id="titled-name-refused"),
    pytest.param("Who lives near Alpha Beta?", "Jim Doe", [TOWN], [("Gamma", "Gamma is a game created by "
                                                                   "Sidhe Interactive, directed by Bo Lund.")],
                 "Bo Lund", None, id="company-name-refused"),
])
def test_open_answer_typing(question, answer, gold, noise, wrong, reason) -> None:
    gold = [(title, text.format(answer=answer)) for title, text in gold]
    spec = _item(question, answer, gold, noise)
    if reason:
        with pytest.raises(NoSafeEdit, match=reason):
            plan_for(spec)
        return
    if isinstance(wrong, set):  # a seeded choice among these (no candidate of that kind in the distractors)
        assert plan_for(spec).wrong_answer in wrong
        wrong = plan_for(spec).wrong_answer
    article = re.search(rf"\b(an?) {answer}\b", gold[0][1])
    if article:
        _assert_one_edit(spec, wrong, article.group(0), f"{'an' if wrong[0] in 'AEIOU' else 'a'} {wrong}")
    else:
        _assert_one_edit(spec, wrong, answer, wrong)


ANN, BOB = "Ann Lee", "Bob Ray"
NATIONALITIES = {"English", "Scottish", "French", "German", "Dutch", "Japanese", "Canadian", "Irish"}


@pytest.mark.parametrize(("question", "answer", "first", "second", "before", "after", "reason"), [
    pytest.param("Are Ann Lee and Bob Ray both American?", "yes", "Ann Lee is an American poet.",
                 "Bob Ray is an American singer.", "American", NATIONALITIES, None, id="both-a-nationality"),
    pytest.param("Are Ann Lee and Bob Ray of the same nationality?", "yes", "Ann Lee is a French poet.",
                 "Bob Ray is a French singer.", "French", NATIONALITIES, None, id="same-nationality"),
    pytest.param("Are Ann Lee and Bob Ray both native to Asia?", "yes", "Ann Lee is a plant native to Asia.",
                 "Bob Ray is a shrub native to eastern Asia.", "Asia", {"Europe", "Africa", "North America",
                                                                        "South America", "Australia"},
                 None, id="both-native-to-a-continent"),
    pytest.param("Are Ann Lee and Bob Ray both native to Asia?", "yes", "Ann Lee is a plant native to Asia.",
                 "Bob Ray is a shrub native to Asia, in Japan and China.", None, None, "also names a place",
                 id="continent-beside-its-countries"),
    pytest.param("Are Ann Lee and Bob Ray both based in Maryland?", "yes", "Ann Lee is a magazine based in Maryland.",
                 "Bob Ray is a magazine published in Baltimore, Maryland.", None, None, "also names a place",
                 id="state-after-its-city"),
    pytest.param("Are Ann Lee and Bob Ray both American?", "yes", "Ann Lee is an American poet. She is American.",
                 "Bob Ray is an American singer. He is American.", None, None, "not stated once",
                 id="nationality-stated-twice-in-each"),
    # a 'no' decided by one nationality: Bob's one nationality becomes the asked one, so his sentence alone
    # makes the answer 'yes'
    pytest.param("Are both Ann Lee and Bob Ray American film directors?", "no", "Ann Lee is an American film director.",
                 "Bob Ray is a French film director.", "a French", "an American", None, id="no-both-a-nationality"),
    pytest.param("Do Ann Lee and Bob Ray have the same nationality?", "no", "Ann Lee is a Dutch poet.",
                 "Bob Ray is an English singer.", "an English", "a Dutch", None, id="no-same-nationality"),
    pytest.param("Are both Ann Lee and Bob Ray American film directors?", "no", "Ann Lee is an American film director.",
                 "Bob Ray is a French painter.", None, None, "do not state every other property",
                 id="another-property-also-differs"),
    pytest.param("Do Ann Lee and Bob Ray have the same nationality?", "no", "Ann Lee is a Dutch poet.",
                 "Bob Ray is an English singer who won the French Open.", None, None, "not one nationality stated",
                 id="two-nationalities-named"),
])
def test_yes_no_property_words(question, answer, first, second, before, after, reason) -> None:
    spec = _item(question, answer, [(ANN, first), (BOB, second)], qtype="comparison")
    if reason:
        with pytest.raises(NoSafeEdit, match=reason):
            plan_for(spec)
        return
    _assert_one_edit(spec, "no" if answer == "yes" else "yes", before, after)


@pytest.mark.parametrize(("question", "answer", "titles", "first", "second", "wrong", "before", "after", "reason"), [
    # Ann's 40 species become fewer than Bob's 12 (6-11), so her sentence now decides for Bob.
    pytest.param("Which genus has more species, Ann Lee or Bob Ray?", ANN, (ANN, BOB),
                 "Ann Lee is a genus of 40 species.", "Bob Ray is a genus of 12 species.", BOB, "40",
                 {str(n) for n in range(6, 12)}, None, id="more-species"),
    pytest.param("Which band has fewer members, Ann Lee or Bob Ray?", BOB, (ANN, BOB),
                 "Ann Lee is a band of 40 members.", "Bob Ray is a band of 12 members.", ANN, "12",
                 {str(n) for n in range(41, 62)}, None, id="fewer-members"),
    pytest.param("Which opera has more acts, Ann Lee or Bob Ray?", BOB, (ANN, BOB),
                 "Ann Lee is an opera in three acts.", "Bob Ray is an opera in four acts.", ANN, "four",
                 {"two"}, None, id="acts-in-words"),
    pytest.param("Which tower is taller, Ann Lee or Bob Ray?", ANN, (ANN, BOB),
                 "Ann Lee is a tower 1,200 ft tall.", "Bob Ray is a tower 900 ft tall.", BOB, "1,200",
                 {f"{n:,}" for n in range(450, 900)}, None, id="taller-with-separators"),
    pytest.param("Which genus has more species, Ann Lee or Bob Ray?", ANN, (ANN, BOB),
                 "Ann Lee is a genus of 30 to 40 species.", "Bob Ray is a genus of 12 species.", None, None, None,
                 "not one figure", id="range-refused"),
    pytest.param("Which tower is taller, Ann Lee or Bob Ray?", ANN, (ANN, BOB),
                 "Ann Lee is a tower 1,200 ft (366 m) tall.", "Bob Ray is a tower 900 ft tall.", None, None, None,
                 "not one figure", id="converted-height-refused"),
    pytest.param("Which genus has more species, Ann Lee or Bob Ray?", ANN, (ANN, BOB),
                 "Ann Lee is a genus of 10 species.", "Bob Ray is a genus of 12 species.", None, None, None,
                 "do not decide", id="figures-disagree-with-gold"),
    pytest.param("Which film came out first, The Last Ann or Bob Ray?", "The Last Ann", ("The Last Ann", BOB),
                 "The Last Ann is a 2011 film.", "Bob Ray is a 2015 film.", BOB, "2011",
                 {str(n) for n in range(2016, 2021)}, None, id="last-in-a-title-is-not-a-death"),
    pytest.param("Who was born first, Ann Lee or Bob Ray?", "Ann Mary Lee", (ANN, BOB),
                 "Ann Mary Lee (born 1920) is a poet.", "Bob Ray (born 1941) is a singer.", BOB, "1920",
                 {str(n) for n in range(1942, 1947)}, None, id="answer-matched-by-surname"),
    pytest.param("Who was born first, Ann Lee or Bob Ray?", ANN, (ANN, BOB),
                 "Ann Lee (born 1920) made films in the 1930s.", "Bob Ray (born 1941) is a singer.", None, None,
                 None, "no year past", id="year-kept-before-a-decade"),
])
def test_comparison_by_one_figure(question, answer, titles, first, second, wrong, before, after, reason) -> None:
    spec = _item(question, answer, [(titles[0], first), (titles[1], second)], qtype="comparison")
    if reason:
        with pytest.raises(NoSafeEdit, match=reason):
            plan_for(spec)
        return
    _assert_one_edit(spec, wrong, before, after)


def _category(spec: InstanceSpec) -> str:
    answer = spec.reference.answers[0].text.strip().lower()
    return "yes/no" if answer in ("yes", "no") else spec.attributes.question_type


@pytest.mark.parametrize(("category", "least_built", "total"), [
    # issue 43: an item whose gold is stated again elsewhere in the evidence is skipped by the rules (65 of the 300
    # built before), so every rule-built item has gold_mentions_left = 0; the generative path builds the rest
    pytest.param("bridge", 207, 394, id="bridge"),
    pytest.param("comparison", 16, 80, id="comparison"),
    pytest.param("yes/no", 12, 26, id="yes-no"),
    pytest.param("all", 235, 500, id="all"),
])
def test_hotpotqa_coverage_per_question_type(category: str, least_built: int, total: int) -> None:
    sources = source_specs("hotpotqa")
    result = build_stress(sources, seed=0)
    by_id = {s.id: s for s in sources}
    categories = Counter(_category(s) for s in sources)
    built = Counter(_category(by_id[i.metadata["rag_stress"]["source_id"]]) for i in result.instances)
    assert (sum(categories.values()) if category == "all" else categories[category]) == total
    assert (sum(built.values()) if category == "all" else built[category]) >= least_built
