"""The decision metric declarations are kept between look-ups (decision_metrics, decision_catalogue, decision_key)
only while the registries stay as they were: a protocol registered or removed after a look-up is seen by the next."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.analysis.readmodel import decision_scores as keys
from core.protocols import PACKAGE_OF, PROTOCOLS, decision_metrics, get_protocol, register

TOY = "catalogue_toy"


def _toy_keys() -> list[str]:
    return [k for k in keys.decision_catalogue() if k.startswith(TOY + ":")]


def test_a_protocol_registered_after_a_look_up_is_in_the_next() -> None:
    assert _toy_keys() == [] and TOY not in PROTOCOLS  # looked up (and kept) before the registration
    register(replace(get_protocol("enterprise_rag"), name=TOY, pages=(), labels=(), judge_suites=()))
    try:
        assert f"{TOY}:strict_ias" in _toy_keys()
        assert keys.decision_key(f"{TOY}:strict_ias").protocol == TOY
        assert [m.id for m in decision_metrics(TOY)] == [m.id for m in decision_metrics("enterprise_rag")]
    finally:  # undo all register() did (a protocol without pages or label kinds): the registry and its package
        PROTOCOLS.remove(TOY)
        del PACKAGE_OF[TOY]
    assert _toy_keys() == []
    with pytest.raises(KeyError):
        keys.decision_key(f"{TOY}:strict_ias")


@pytest.mark.parametrize("look_up", [
    pytest.param(lambda: keys.decision_catalogue(), id="catalogue"),
    pytest.param(lambda: keys.decision_key("strict_ias"), id="key"),
    pytest.param(lambda: decision_metrics("enterprise_rag"), id="protocol metrics"),
])
def test_repeated_look_ups_are_equal(look_up) -> None:
    assert look_up() == look_up()


def test_the_catalogue_is_a_copy() -> None:
    keys.decision_catalogue().clear()
    assert "strict_ias" in keys.decision_catalogue()
