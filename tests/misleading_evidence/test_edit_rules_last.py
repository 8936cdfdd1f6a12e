"""HotpotQA answers with a lead-in ('aired on PBS stations', 'on iTunes.', 'the Chechen Republic', 'the Siemens
group'): the closed-list word of the core is replaced, the lead-in kept, and the coverage this adds on the slice."""

from __future__ import annotations

import pytest

from core.protocols.misleading_evidence.builder import US_STATES
from core.protocols.misleading_evidence.builder_plans import build_stress
from tests.misleading_evidence.conftest import source_specs
from tests.misleading_evidence.test_edit_rules import _item
from tests.misleading_evidence.test_edit_rules_more import _plan_or_refusal

AIRED = "It first aired on PBS stations nationwide, on November 13, 2007."
RELEASED = "It was the first print publication to be released on iTunes."
HONORED = "Honored Artist of the Chechen Republic (2005)."
SOONERS = "He was a college football quarterback for the Oklahoma Sooners."
KNOWN = "The conference was known as the North Atlantic Conference from 1988 to 1996."
AWARD = "Her book \"Gooney Bird Greene\" won the 2002 Rhode Island Children's Book Award."
GROUP = "The company is now part of the Siemens group of Germany."


@pytest.mark.parametrize(("question", "answer", "gold", "word", "news", "reason"), [
    pytest.param("The documentary first aired on what station?", "aired on PBS stations", AIRED, "PBS",
                 {"ABC", "CBS", "NBC", "Fox", "The CW"}, None, id="network-after-aired-on"),
    pytest.param("It was the first print publication to be released where?", "on iTunes.", RELEASED, "iTunes",
                 {"Google Play", "Zinio", "Amazon Kindle"}, None, id="digital-store-after-on-with-full-stop"),
    pytest.param("She is an Honored Artist of where?", "the Chechen Republic", HONORED, "Chechen Republic",
                 {"Chuvash Republic", "Udmurt Republic", "Komi Republic", "Kabardino-Balkar Republic",
                  "Karachay-Cherkess Republic"}, None, id="russian-republic-after-the"),
    pytest.param("It is now a part of what German company?", "the Siemens group", GROUP, "Siemens",
                 {"Bosch", "ThyssenKrupp", "MAN", "Daimler"}, None, id="german-group-after-the"),
    pytest.param("He played college football for which team?", "the Oklahoma Sooners", SOONERS, "Oklahoma Sooners",
                 {"Texas Longhorns", "Nebraska Cornhuskers", "Kansas Jayhawks", "Alabama Crimson Tide",
                  "Michigan Wolverines"}, None, id="college-team-after-the"),
    pytest.param("It was known as what from 1988 to 1996?", "the North Atlantic Conference", KNOWN,
                 "North Atlantic Conference", {"Yankee Conference", "Atlantic 10 Conference",
                                               "Colonial Athletic Association", "Metro Atlantic Athletic Conference"},
                 None, id="conference-after-the"),
    pytest.param("Which terrorist group was the cause?", "al-Qaeda", "It was accused of harboring al-Qaeda operatives.",
                 "al-Qaeda", {"Hezbollah", "Hamas", "Lashkar-e-Taiba", "Jemaah Islamiyah"}, None,
                 id="terrorist-group-without-lead-in"),
    pytest.param("Which award did she win in 2002?", "the 2002 Rhode Island Children's Book Award", AWARD,
                 "Rhode Island", set(US_STATES) - {"Rhode Island"},
                 None, id="us-state-inside-a-name"),
    pytest.param("Which award did she win in 2002?", "the Rhode Island Children's Book Award",
                 "She won the Rhode Island Children's Book Award in Rhode Island.", None, None, "stated elsewhere",
                 id="us-state-stated-twice"),
    pytest.param("The documentary first aired on what station?", "aired on PBS stations",
                 AIRED + " PBS reran it in 2008.", None, None, "stated elsewhere", id="network-stated-twice"),
])
def test_lead_in_answers(question, answer, gold, word, news, reason) -> None:
    spec = _item(question, answer, [("Gold", gold)])
    plan = _plan_or_refusal(spec, reason)
    if plan is not None:
        assert plan.edit.before == answer and plan.edit.after == plan.wrong_answer
        assert plan.wrong_answer in {answer.replace(word, new) for new in news}
        assert plan.wrong_answer in plan.misleading.sentences[plan.misleading.answer]


LOCATED = "It is located in Hillsborough County along the banks of the Merrimack River."


@pytest.mark.parametrize(("noise", "wrong", "reason"), [
    pytest.param(["WKXQ is a station licensed to Erie County, New York."], "located in Erie County", None,
                 id="county-from-distractor-text"),
    pytest.param(["WKXQ is a station in The Tuscola County Fair grounds."], "located in Tuscola County", None,
                 id="article-before-county-left-out"),
    pytest.param(["WKXQ is a station licensed to Buffalo, New York."], None, "no same-type entity .*county",
                 id="no-county-in-distractors"),
])
def test_lead_in_county(noise, wrong, reason) -> None:
    spec = _item("WLMW is licensed to a city in which county?", "located in Hillsborough County",
                 [("Gold", LOCATED)], [("WKXQ", text) for text in noise])
    plan = _plan_or_refusal(spec, reason)
    if plan is not None:
        assert plan.wrong_answer == wrong and plan.edit.before == "located in Hillsborough County"


def test_hotpotqa_coverage_with_lead_in_answers() -> None:
    # main built 291; the lead-in rule adds 4 (PBS, iTunes, the Chechen Republic, the Siemens group), the county 1, the team and
    # the conference 2, the terrorist group and the state inside an award's name 2
    assert len(build_stress(source_specs("hotpotqa"), seed=0).instances) >= 235  # issue 43: gold stated again -> skipped
