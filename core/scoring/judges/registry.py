"""The judge registry ('heuristic', 'llm') and the metric registry (which metric runs on which mode)."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.generation.providers.base import ModelConfig
from core.registry import Registry, unknown_name_message
from core.scoring.judges.base import ConstraintMode, ContextClaimsOutcome, Judge, JudgeInput, MetricOutcome
from core.scoring.judges.heuristic import HeuristicJudge
from core.scoring.judges.llm_judge import LLMJudge
from core.scoring.judges.names import HEURISTIC, SINGLE_SUFFIX
from core.store.models import Model
from core.store.schema import ANSWER_TYPES

JudgeFactory = Callable[[Engine, str, ConstraintMode, int | None], Judge]
JUDGES: Registry[JudgeFactory] = Registry("judge")


@dataclass(frozen=True)
class MetricSpec:
    """A response-level metric a judge computes against the documents, and whether it needs the context claims first
    (the instance modes it applies to are its protocol's declaration: core.protocols.base.MetricModes)."""

    name: str
    compute: Callable[[Judge, JudgeInput, ContextClaimsOutcome | None], Awaitable[MetricOutcome]]
    needs_context_claims: bool = False


METRICS: Registry[MetricSpec] = Registry("metric")


@dataclass(frozen=True)
class JudgedReferenceMetric:
    """A judge metric of reference protocols: the answer types it applies to and how a judge computes it."""

    name: str
    answer_types: tuple[str, ...]
    compute: Callable[[Judge, JudgeInput], Awaitable[MetricOutcome]]
    not_applicable_reason: str


REFERENCE_JUDGE_METRICS: Registry[JudgedReferenceMetric] = Registry("reference judge metric")


@JUDGES.register("heuristic")
def _heuristic(engine: Engine, arg: str, constraint_mode: ConstraintMode, max_connections: int | None) -> Judge:
    return HeuristicJudge()


@JUDGES.register("llm")
def _llm(engine: Engine, model_name: str, constraint_mode: ConstraintMode, max_connections: int | None) -> Judge:
    from core.generation.llm import make_client  # lazy: the client module is optional for the heuristic judge
    from core.store.writes import GroupWriter

    client = make_client(model_config(engine, model_name), engine, writer=GroupWriter(engine),  # cache rows grouped
                         max_connections=max_connections)
    return LLMJudge(client, f"llm:{model_name}", constraint_mode)


def model_config(engine: Engine, name: str) -> ModelConfig:
    """ModelConfig of the Model row called `name` (raises LookupError listing known models)."""
    from core.generation.llm import config_from_model

    with Session(engine) as session:
        row = session.exec(select(Model).where(Model.name == name)).first()
        if row is None:
            known = ", ".join(session.exec(select(Model.name)).all()) or "(none)"
            raise LookupError(f"unknown judge model {name!r}; known models: {known}")
        return config_from_model(row)


def resolve_judge(spec: str, engine: Engine, constraint_mode: ConstraintMode = "batched",
                  max_connections: int | None = None) -> Judge:
    """Build the judge 'heuristic', 'llm:<Model.name>' (in `constraint_mode`) or 'llm:<Model.name>@single' (single);
    an LLM judge's HTTP pool holds `max_connections` (default: its SDK's)."""
    kind, _, arg = spec.partition(":")
    if arg.endswith(SINGLE_SUFFIX):
        arg, constraint_mode = arg.removesuffix(SINGLE_SUFFIX), "single"
    if kind == "llm" and not arg:
        raise ValueError("an llm judge needs a model name: 'llm:<Model.name>'")
    return JUDGES.get(kind)(engine, arg, constraint_mode, max_connections)


def register_metric(spec: MetricSpec) -> MetricSpec:
    """Add a metric spec to METRICS."""
    METRICS.add(spec.name, spec)
    return spec


def _coverage(judge: Judge, item: JudgeInput, claims: ContextClaimsOutcome | None) -> Awaitable[MetricOutcome]:
    """Coverage against the context claims the scorer extracted first (needs_context_claims)."""
    if claims is None:
        raise ValueError("coverage needs the context claims: extract them before scoring coverage")
    return judge.coverage(item, claims)


register_metric(MetricSpec("faithfulness", lambda j, i, c: j.faithfulness(i)))
register_metric(MetricSpec("coverage", _coverage, needs_context_claims=True))
register_metric(MetricSpec("rejection", lambda j, i, c: j.rejection(i)))
register_metric(MetricSpec("conflict_recognition", lambda j, i, c: j.conflict_recognition(i)))
register_metric(MetricSpec("refusal", lambda j, i, c: j.refusal(i)))

REFERENCE_JUDGE_METRICS.add("correctness", JudgedReferenceMetric(
    "correctness", ("short", "long", "mcq", "multi", "boolean"), lambda j, i: j.correctness(i),
    not_applicable_reason="unanswerable reference: scored by rejection"))
# Judge prompts a response's prompt_meta['judge_prompt'] can ask for, as 'module:function' (imported when used).
JUDGE_PROMPTS: dict[str, str] = {"lit_ragbench:paper": "core.protocols.lit_ragbench.judge:paper_accuracy"}


def judged_accuracy(judge: Judge, item: JudgeInput) -> Awaitable[MetricOutcome]:
    """The judge's 1/0 against the reference: with the judge prompt the response's setting names, else correctness."""
    name = item.prompt_meta.get("judge_prompt")
    if not name:
        return judge.correctness(item)
    if name not in JUDGE_PROMPTS:
        raise KeyError(unknown_name_message("judge prompt", name, list(JUDGE_PROMPTS)))
    module, _, function = JUDGE_PROMPTS[name].partition(":")
    return getattr(importlib.import_module(module), function)(judge, item)


REFERENCE_JUDGE_METRICS.add("judged_accuracy", JudgedReferenceMetric(
    "judged_accuracy", ANSWER_TYPES, judged_accuracy, not_applicable_reason=""))  # abstention refs too
REFERENCE_JUDGE_METRICS.add("refusal", JudgedReferenceMetric(
    "refusal", ANSWER_TYPES, lambda j, i: j.refusal(i), not_applicable_reason=""))  # does the response decline
REFERENCE_JUDGE_METRICS.add("consistency", JudgedReferenceMetric(
    "consistency", ("long",), lambda j, i: j.consistency(i),
    not_applicable_reason="consistency applies to long answers only"))


def judge_choices(engine: Engine) -> list[str]:
    """Judge ids a run can be scored with: the offline heuristic judge, then `llm:<name>` per non-baseline model."""
    with Session(engine) as session:
        names = session.exec(select(Model.name).where(col(Model.is_baseline) == False).order_by(Model.name)).all()  # noqa: E712
    return judge_ids(names)


def judge_ids(generators: Iterable[str]) -> list[str]:
    """judge_choices of these non-baseline model names, ordered by name as the database orders them (a page that
    holds the registered models already: models_admin.model_configs)."""
    return [HEURISTIC, *(f"llm:{name}" for name in generators)]
