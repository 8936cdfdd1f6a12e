"""A metric that brings its computation in its declaration (a protocol package's own metric): the scorer calls it
lexically or with the pass's judge, a crash is a judge error, no reference is not applicable; a package's
declarations leave the registry with the package."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from core.metrics import DECLARATIONS, DECLARED_BY, MetricDeclaration, declare, undeclare_package
from core.protocols import register_package, unregister_package
from core.scoring.judges.base import JudgeInput, MetricOutcome
from core.scoring.judges.heuristic import HeuristicJudge
from core.scoring.scorer import _Scorer
from core.store.schema import ReferenceSpec

PACKAGE = "tests.toy_protocol"
REFERENCE = ReferenceSpec.model_validate({"answers": [{"text": "blue"}]})


def ends_on_answer(reference: ReferenceSpec, response: str, language: str | None) -> MetricOutcome:
    """1 when the response ends on the first answer (the test's lexical computation)."""
    return MetricOutcome(value=float(response.rstrip(".").endswith(reference.answers[0].text)), reason=language or "")


def crashes(reference: ReferenceSpec, response: str, language: str | None) -> MetricOutcome:
    raise RuntimeError("boom")


async def named_by_judge(judge, item: JudgeInput) -> MetricOutcome:
    """The judge's name as the reason, 1 when it scored a non-empty response (the test's judged computation)."""
    return MetricOutcome(value=float(bool(item.response)), reason=judge.name)


CASES = [
    pytest.param({"compute": ends_on_answer}, "It is blue.", REFERENCE, ("ok", 1.0, "en"), id="lexical-scored"),
    pytest.param({"compute": ends_on_answer}, "No idea.", REFERENCE, ("ok", 0.0, "en"), id="lexical-wrong"),
    pytest.param({"compute": ends_on_answer}, "It is blue.", None, ("not_applicable", None,
                                                                    "the instance has no reference"), id="no-reference"),
    pytest.param({"compute": crashes}, "It is blue.", REFERENCE, ("error", None, "judge failed: RuntimeError: boom"),
                 id="crash-is-a-judge-error"),
    pytest.param({"judged": named_by_judge}, "It is blue.", None, ("ok", 1.0, "heuristic"), id="judged-by-the-pass"),
]


@pytest.mark.parametrize(("computation", "response", "reference", "expected"), CASES)
def test_the_scorer_calls_the_declared_computation(computation: dict, response: str, reference, expected) -> None:
    declared = MetricDeclaration("pkg.metric", "Package metric", "rate", ("lexical",), **computation)
    item = JudgeInput(query="What colour?", mode="", documents=[], response=response, reference=reference,
                      language="en")
    scorer = SimpleNamespace(judge=HeuristicJudge())
    out = asyncio.run(_Scorer.declared_outcome(scorer, declared, item))  # type: ignore[arg-type]
    assert (out.status, out.value, out.reason) == expected


def test_declarations_leave_with_their_module() -> None:
    declare(MetricDeclaration("declared_here.metric", "Here", "rate", ("lexical",), compute=ends_on_answer))
    assert DECLARED_BY["declared_here.metric"] == __name__
    assert undeclare_package(__name__) == ["declared_here.metric"] and "declared_here.metric" not in DECLARATIONS


def test_a_package_metric_comes_and_goes_with_its_package() -> None:
    for _ in range(2):  # registering again after unregistering meets no duplicate
        register_package(PACKAGE)
        assert DECLARED_BY["toy_echo.echo_match"] == "tests.toy_protocol"
        unregister_package(PACKAGE)
        assert "toy_echo.echo_match" not in DECLARATIONS
