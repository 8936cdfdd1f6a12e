"""HotpotQA yes/no edit rules beyond property words: a 'no' decided by one count ('operas with three acts') and a
yes / no decided by the order of two years ('released before'), and the coverage they add on the shared slice."""

from __future__ import annotations

import pytest

from core.protocols.misleading_evidence.builder import NoSafeEdit, Plan, one_span_diff
from core.protocols.misleading_evidence.builder_plans import build_stress, plan_for
from core.store.schema import InstanceSpec
from tests.misleading_evidence.conftest import source_specs
from tests.misleading_evidence.test_edit_rules import _item


@pytest.mark.parametrize(("question", "answer", "first", "second", "before", "after", "reason"), [
    # a 'no' decided by one count: Bob's other count becomes the asked one, so his sentence alone makes it 'yes'
    pytest.param("Are both Ann Lee and Bob Ray operas with three acts?", "no", "Ann Lee is an opera in three acts.",
                 "Bob Ray is an opera in two acts by Mozart.", "two", {"three"}, None, id="no-count-to-yes"),
    pytest.param("Are both Ann Lee and Bob Ray operas with three acts?", "no", "Ann Lee is an opera in three acts.",
                 "Bob Ray is a ballet in two acts.", None, None, "do not state every other property",
                 id="count-other-property-differs"),
    pytest.param("Are both Ann Lee and Bob Ray operas with three acts?", "no",
                 "Ann Lee is an opera in three acts.", "Bob Ray is an opera in two acts, later cut to one act.",
                 None, None, "not one count stated", id="two-counts-in-one-entity"),
    # a yes / no decided by the order of the entities' first years: Ann's year moves past Bob's
    pytest.param("Was the film Ann Lee released before the film Bob Ray?", "yes", "Ann Lee is a 1984 film.",
                 "Bob Ray is a 2010 film.", "1984", {"2011", "2012", "2013", "2014", "2015"}, None,
                 id="before-yes-to-no"),
    pytest.param("Was Ann Lee founded after Bob Ray?", "no", "Ann Lee is a club founded in 1901.",
                 "Bob Ray is a club founded in 1950.", "1901", {"1951", "1952", "1953", "1954", "1955"}, None,
                 id="after-no-to-yes"),
    pytest.param("Was the film Ann Lee released before the film Bob Ray?", "no", "Ann Lee is a 1984 film.",
                 "Bob Ray is a 2010 film.", None, None, "do not decide the gold answer",
                 id="years-disagree-with-gold"),
])
def test_yes_no_counts_and_year_order(question, answer, first, second, before, after, reason) -> None:
    spec = _item(question, answer, [("Ann Lee", first), ("Bob Ray", second)], qtype="comparison")
    plan = _plan_or_refusal(spec, reason)
    if plan is not None:
        assert plan.wrong_answer == ("no" if answer == "yes" else "yes")
        assert plan.edit.before == before and plan.edit.after in after


def _plan_or_refusal(spec: InstanceSpec, reason: str | None) -> Plan | None:
    """The plan, its clean and misleading evidence checked to differ in its one edit; None when refused as expected."""
    if reason:
        with pytest.raises(NoSafeEdit, match=reason):
            plan_for(spec)
        return None
    plan = plan_for(spec)
    clean, misleading = plan.evidence.text(), plan.misleading.text()
    start, end, new_end = one_span_diff(clean, misleading)
    assert clean[start:end] in plan.edit.before and misleading[start:new_end] in plan.edit.after
    return plan


SHOW = "The series was created by Robert Smigel, Michael Koman and David Feldman."
JANE = "Jane Roe (born 1950) is an American comedian. She hosted a show."
SCHOOL = "Venice School is a group of composers. It was founded in 1950."


@pytest.mark.parametrize(("question", "answer", "gold", "noise", "wrong", "reason"), [
    pytest.param("Who created the show?", "Robert Smigel, Michael Koman and David Feldman", SHOW, [JANE],
                 "Robert Smigel, Michael Koman and Jane Roe", None, id="people-last-name-from-a-person-paragraph"),
    pytest.param("Who created the show?", "Robert Smigel, Michael Koman and David Feldman", SHOW, [SCHOOL], None,
                 "(list of people)", id="a-group-is-not-a-person"),
    pytest.param("Who created the show?", "Robert Smigel, Michael Koman and David Feldman",
                 SHOW + " Feldman also wrote it.", [JANE], None, "stated elsewhere", id="last-surname-stated-twice"),
    pytest.param("Which two battles did he win?", "Battle of Britain and the Battle of Malta",
                 "He helped to win the Battle of Britain and the Battle of Malta.",
                 ["The Battle of Crete was fought in 1941."], "Battle of Britain and the Battle of Crete", None,
                 id="battles-last-from-distractor-text"),
])
def test_lists_of_people_and_battles(question, answer, gold, noise, wrong, reason) -> None:
    spec = _item(question, answer, [("Gold", gold)], [(" ".join(text.split()[:2]), text) for text in noise])
    plan = _plan_or_refusal(spec, reason)
    if plan is not None:
        assert plan.wrong_answer == wrong and plan.edit.before == answer


def test_hotpotqa_coverage_with_more_rules() -> None:
    # main built 287; the count and year-order rules add 2, the lists of people 2
    assert len(build_stress(source_specs("hotpotqa"), seed=0).instances) >= 235  # issue 43: gold stated again -> skipped
