"""What a protocol declares for a decision (issue 36): every metric it reports with its role (headline or diagnostic),
direction, default floor, the judge kinds that can decide it and its meaning, through one registry function
(core.protocols.decision_metrics); registration refuses names it cannot resolve; the picker's default floors and
directions are the declarations'."""

from __future__ import annotations

import pytest

from core.analysis.picker import DEFAULT_FLOORS, FloorMargin, lower_is_better
from core.metrics import MetricDeclaration
from core.protocols import DEFAULT_PROTOCOL, PACKAGE_OF, PROTOCOLS, decision_metrics, register
from core.protocols.base import Condition, Protocol
from core.registry import UnknownNameError

HEADLINES = [  # protocol -> its headline metrics, in the order decision_metrics gives them
    pytest.param("enterprise_rag", ["faithfulness", "coverage", "rejection", "conflict_recognition", "strict_ias"],
                 id="enterprise_rag"),
    pytest.param("kb_corruption", ["mcq_accuracy", "corruption_delta"], id="kb_corruption"),
    pytest.param("misleading_evidence", ["misleading_rate"], id="misleading_evidence"),
    pytest.param("lit_ragbench", ["judged_accuracy"], id="lit_ragbench"),
    pytest.param("instruction_following", ["strict_ias"], id="instruction_following"),
]


@pytest.mark.parametrize(("protocol", "headline"), HEADLINES)
def test_headline_metrics_come_first(protocol: str, headline: list[str]) -> None:
    rows = decision_metrics(protocol)
    assert [r.id for r in rows if r.role == "headline"] == headline
    assert [r.role for r in rows] == sorted((r.role for r in rows), key=lambda role: role != "headline")


ROWS = [  # (protocol, metric) -> (role, higher is better, floor, judges)
    pytest.param("enterprise_rag", "rejection", ("headline", True, 0.4, ("lexical", "heuristic", "llm")), id="floor"),
    pytest.param("enterprise_rag", "over_abstention", ("diagnostic", False, None, ("derived",)), id="lower-better"),
    pytest.param("misleading_evidence", "misleading_rate", ("headline", False, None, ("lexical", "heuristic", "llm")),
                 id="lower-better-headline"),
]


@pytest.mark.parametrize(("protocol", "metric", "expected"), ROWS)
def test_a_row_reads_the_declarations(protocol: str, metric: str, expected: tuple) -> None:
    row = next(r for r in decision_metrics(protocol) if r.id == metric)
    assert (row.role, row.higher_is_better, row.floor, row.judges) == expected and row.meaning


@pytest.mark.parametrize("protocol", sorted(n for n, pkg in PACKAGE_OF.items() if pkg.startswith("core.protocols.")))
def test_every_protocol_has_a_headline_metric_and_every_metric_a_meaning(protocol: str) -> None:
    rows = decision_metrics(protocol)
    assert any(r.role == "headline" for r in rows) and [r.id for r in rows if not r.meaning] == []


def _protocol(**more) -> Protocol:
    return Protocol(name="made_up", title="Made up", required={}, conditions=(Condition("", "default"),),
                    metrics=("exact_match",), **more)


REFUSED = [
    pytest.param({"aggregates": ("noise_curv",)}, "undeclared metric", id="unknown-aggregate"),
    pytest.param({"headline": ("token_f1",)}, "headline metric it does not report", id="headline-not-reported"),
]


@pytest.mark.parametrize(("more", "message"), REFUSED)
def test_registration_refuses_unknown_names(more: dict, message: str) -> None:
    with pytest.raises(UnknownNameError, match=message):
        register(_protocol(**more))
    assert "made_up" not in PROTOCOLS


def test_a_floor_outside_the_range_is_refused() -> None:
    with pytest.raises(ValueError, match="floor 1.5 is outside the range"):
        MetricDeclaration("x.y", "X", "rate", ("lexical",), floor=1.5)


def test_the_picker_reads_floors_and_directions_from_the_declarations() -> None:
    assert {r.id: r.floor for r in decision_metrics(DEFAULT_PROTOCOL) if r.floor is not None} == DEFAULT_FLOORS
    assert lower_is_better("over_abstention") and not lower_is_better("rejection")
    assert FloorMargin("over_abstention", 0.1, 0.15).margin == pytest.approx(0.05)
