"""Expert label kinds are typed declarations of a protocol (`Protocol.labels`): registration refuses a kind that
is malformed, checks a metric its protocol does not report, or takes a gold-label field that is taken; a judge suite
declared twice is refused too. The stored shape is generic (core.store.label_models.GoldPayload: any label kind a
value per unit), so labels stored before label kinds were declared read back as they were, and a malformed one is
still reported by field."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.protocols import LABEL_KINDS, PROTOCOLS, get_protocol, register
from core.protocols.base import JudgeSuite, LabelKind, LabelValue
from core.registry import UnknownNameError
from core.store.label_models import payload_problems

SCALE = (LabelValue("yes", "Yes", "Alt+1"), LabelValue("no", "No", "Alt+2"))


def kind(**changes) -> LabelKind:
    """A well-formed label kind checking citation.recall (a metric the base protocol reports), with changes."""
    base = LabelKind("made_up_support", "Made-up support", "is it?", SCALE, units="m:f", checks="citation.recall",
                     judged="m:g", agrees=("yes",))
    return replace(base, **changes)


REFUSED = [  # (label kinds, judge suites) -> the message
    pytest.param((kind(checks="citation.recal"),), (), "checks a metric it does not report.*citation.recall",
                 id="checks-an-unreported-metric"),
    pytest.param((kind(name="note"),), (), "'note' names a gold-label field taken already", id="a-shared-field"),
    pytest.param((kind(name="citation_support"),), (), "'citation_support' names a gold-label field taken already",
                 id="another-protocols-kind"),
    pytest.param((kind(), kind()), (), "'made_up_support' names a gold-label field taken already", id="twice"),
    pytest.param((kind(name="made-up"),), (), "not an identifier", id="not-an-identifier"),
    pytest.param((kind(scale=(SCALE[0], replace(SCALE[1], shortcut="Alt+1"))),), (), "shortcuts repeat",
                 id="a-repeated-shortcut"),
    pytest.param((kind(back_shortcut="Alt+2"),), (), "shortcuts repeat", id="back-takes-a-value-shortcut"),
    pytest.param((kind(agrees=("maybe",)),), (), "agrees names 'maybe', not on the scale", id="agrees-off-scale"),
    pytest.param((), (JudgeSuite("alce-citations", "m:f"),), "judge suite 'alce-citations' is declared already",
                 id="a-suite-declared-twice"),
]


@pytest.mark.parametrize(("labels", "suites", "message"), REFUSED)
def test_a_bad_declaration_is_refused_and_leaves_nothing_behind(labels, suites, message) -> None:
    made_up = replace(get_protocol("citation"), name="labels_toy", labels=labels, judge_suites=suites, builder=None)
    with pytest.raises((ValueError, UnknownNameError), match=message):
        register(made_up)
    assert "labels_toy" not in PROTOCOLS and "made_up_support" not in LABEL_KINDS


STORED = [  # a gold label's payload as stored -> the problems reported (field, message)
    pytest.param({"constraints": {}, "citation_support": {"1": "supported", "2": "partial"}, "note": ""}, [],
                 id="a-citation-label-as-stored-before"),
    pytest.param({"constraints": {"c1": True}, "valid_refusal": 1, "note": "ok"}, [], id="no-label-kind"),
    pytest.param({"constraints": {}, "citation_support": "supported"},
                 [("payload.citation_support", "Input should be a valid dictionary")], id="not-per-unit"),
    pytest.param({"constraints": {}, "citation_support": {"one": "supported"}},
                 [("payload.citation_support.one", "String should match pattern '^[1-9][0-9]{0,5}$'")],
                 id="a-unit-that-is-no-number"),
    pytest.param({"constraints": {}, "surprise": 1}, [("payload.surprise", "Input should be a valid dictionary")],
                 id="an-unknown-field"),
]


@pytest.mark.parametrize(("payload", "found"), STORED)
def test_the_stored_shape_of_a_gold_label(payload, found) -> None:
    assert payload_problems("gold_label", "response", payload) == found
