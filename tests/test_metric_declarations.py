"""Metric declarations (core.metrics): declared once, checked when made, named by protocols at registration, and the
source of the read model's labels, directions and interval families."""

from __future__ import annotations

import math

import pytest

from core.analysis import readmodel
from core.metrics import DECLARATIONS, MetricDeclaration, check_declared, declare, get_metric
from core.protocols import PACKAGE_OF, PROTOCOLS, register
from core.protocols.base import Condition, Protocol
from core.registry import UnknownNameError


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param({"kind": "ratio"}, "kind must be one of rate, bounded, amount", id="unknown-kind"),
        pytest.param({"kind": "rate", "range": (0.0, 100.0)}, "a rate is a share of 0/1 outcomes", id="rate-not-0-1"),
        pytest.param({"kind": "bounded", "range": (0.0, math.inf)}, "needs a finite range", id="bounded-unbounded"),
        pytest.param({"range": (1.0, 1.0)}, "low < high", id="empty-range"),
        pytest.param({"states": ("scored", "lost")}, "unknown states", id="unknown-state"),
        pytest.param({"states": ("not_applicable",)}, "must include 'scored'", id="no-scored-state"),
        pytest.param({"unparseable": "zero"}, "unparseable must be 'wrong' or 'excluded'", id="bad-unparseable-policy"),
        pytest.param({"judges": ()}, "at least one judge", id="no-judge"),
        pytest.param({"compute": lambda r, t, lang: None, "judged": lambda j, i: None}, "either a lexical `compute`",
                     id="two-computations"),
    ],
)
def test_a_declaration_is_checked_when_made(fields: dict, message: str) -> None:
    base = {"id": "x_metric", "label": "X", "kind": "bounded", "judges": ("llm",)}
    with pytest.raises(ValueError, match=message):
        MetricDeclaration(**(base | fields))


def test_a_duplicate_id_raises() -> None:
    with pytest.raises(ValueError, match="duplicate metric name 'faithfulness'"):
        declare(MetricDeclaration("faithfulness", "Faithfulness again", "bounded", ("llm",)))


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        pytest.param("faithfullness", "did you mean: faithfulness", id="doubled-letter"),
        pytest.param("mcq_acuracy", "did you mean: mcq_accuracy", id="missing-letter"),
        pytest.param("strict_ia", "did you mean: strict_ias", id="truncated"),
    ],
)
def test_an_unknown_id_lists_the_known_ones_and_the_close_matches(name: str, suggestion: str) -> None:
    with pytest.raises(UnknownNameError, match=f"unknown metric '{name}'; known: .*faithfulness.*; {suggestion}"):
        get_metric(name)


def test_a_protocol_naming_an_undeclared_metric_fails_at_registration() -> None:
    typo = Protocol(name="typo_protocol", title="Typo", required={}, conditions=(Condition("", "default"),),
                    metrics=("exact_match", "faithfullness"))
    with pytest.raises(UnknownNameError, match="protocol 'typo_protocol' names an undeclared metric: unknown metric "
                                               "'faithfullness'.*did you mean: faithfulness"):
        register(typo)
    assert "typo_protocol" not in PROTOCOLS


BUILTIN = sorted(n for n in PROTOCOLS.names() if PACKAGE_OF.get(n, "").startswith("core.protocols."))


@pytest.mark.parametrize("protocol", BUILTIN)  # a test's toy protocol may come and go while the session runs
def test_every_metric_of_every_protocol_is_declared(protocol: str) -> None:
    check_declared(PROTOCOLS.get(protocol).metrics, protocol)


@pytest.mark.parametrize(
    ("metric", "kind", "family", "higher_is_better"),
    [
        pytest.param("strict_ias", "rate", "clopper-pearson", True, id="strict-ias-rate"),
        pytest.param("loose_ias", "bounded", "beta-effective-n", True, id="loose-ias-bounded"),
        pytest.param("over_abstention", "rate", "clopper-pearson", False, id="over-abstention-lower-is-better"),
        pytest.param("cost_per_1k", "amount", "student-t", False, id="cost-amount"),
        pytest.param("latency_min_per_1k", "amount", "student-t", False, id="latency-amount"),
        pytest.param("orchestration_gap", "bounded", "beta-effective-n", False, id="gap-lower-is-better"),
    ],
)
def test_the_kind_gives_the_interval_family(metric: str, kind: str, family: str, higher_is_better: bool) -> None:
    declared = get_metric(metric)
    assert (declared.kind, declared.interval_family, declared.higher_is_better) == (kind, family, higher_is_better)


@pytest.mark.parametrize(
    ("metric", "counted"),
    [
        pytest.param("mcq_accuracy", ("ok", "unparseable"), id="mcq-unparseable-counts-as-wrong"),
        pytest.param("exact_match", ("ok", "unparseable"), id="unread-yes-no-counts-as-wrong"),
        pytest.param("token_f1", ("ok",), id="no-unparseable-state"),
    ],
)
def test_the_declaration_decides_which_states_enter_the_mean(metric: str, counted: tuple[str, ...]) -> None:
    assert get_metric(metric).counted_statuses() == counted


def test_an_excluded_unparseable_answer_is_left_out_of_the_mean() -> None:
    excluded = MetricDeclaration("x_letter", "X", "rate", ("lexical",), states=("scored", "unparseable"),
                                 unparseable="excluded")
    assert excluded.counted_statuses() == ("ok",) and not excluded.counts_unparseable_as_wrong


def test_the_leaderboard_takes_labels_and_scales_from_the_declarations() -> None:
    assert all(readmodel.METRICS[key] is DECLARATIONS.get(key) for key in readmodel.METRICS)
    assert get_metric("orchestration_gap").label == readmodel.GAP_LABEL
    assert {m.id: m.scale for m in readmodel.COST_METRICS} == {"cost_per_1k": 1.0, "latency_min_per_1k": 1.0}
