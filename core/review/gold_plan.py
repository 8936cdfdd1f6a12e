"""The gold budget planner on stored runs: read the judge-versus-gold disagreement of two models on one metric, plan
the next batch of gold labels (core.analysis.gold_budget: uniform batches, re-planned after each) and put the drawn
items into the experts' queue with their inclusion probabilities (core.review.gold's assignments), so the weighted
corrected estimate stays unbiased.

Unbiased across the two draws: in the plan's population (both models' responses on the instances they share, on
the metric's mode, in domains two of the experts cover: drawn instances elsewhere cannot be queued) every response
sampled before (assigned or labelled) is recorded at probability 1 (a GOLD_DESIGN row: no work, a weight), every
newly drawn one at its planned probability, and every other one kept a positive probability. Conditional on the first sample, each such response's weighted rectifier then has expectation its
true value; outside the population the first draw's probabilities stand. Horvitz-Thompson sums over the two parts,
so the corrected estimates (readmodel.corrected_estimates, any metric) stay unbiased."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.analysis import gold_budget, picker, readmodel
from core.review.auth import Principal, authorize
from core.review.gold import SampleReport, _covering, active_experts, assign_pairs, design_rows, write_assignments
from core.store.labels import gold_labels
from core.store.models import Assignment

PLAN_BATCH = "plan"


@dataclass(frozen=True)
class PlanItem:
    """One shared instance the plan puts into the queue: both models' responses, its domain and probability."""

    instance_uid: str
    domain: str
    response_a: int
    response_b: int
    probability: float
    judged: float  # the judge's difference A - B on it


@dataclass(frozen=True)
class GoldPlan:
    """A plan for two models on one metric, the items drawn for it, and the gold-label version it was read at."""

    run_ids: tuple[int, ...]
    judge: str
    metric: str
    model_a: str
    model_b: str
    shared: int
    labeled: int
    plan: gold_budget.Plan | None  # None: fewer than 2 shared instances
    items: list[PlanItem] = field(default_factory=list)
    version: tuple[int, int, int] = (0, 0, 0)
    population: tuple[tuple[int, str], ...] = ()  # (response id, domain) of both models on every shared instance
    labeled_ids: tuple[int, ...] = ()  # those of them with a gold label when the plan was read


def ranked_models(scores: pd.DataFrame, metric: str) -> list[str]:
    """Models by raw judge mean on `metric`, best first: the first two are the candidates a plan tries to separate."""
    means = scores.groupby("model")[metric].mean().dropna().sort_values(ascending=False, kind="stable")
    return list(means.index)


@dataclass(frozen=True)
class PlannerPair:
    """The planner's models in their default order (A = the first, B = the second) and why those two."""

    models: list[str]
    why: str


def planner_pair(scores: pd.DataFrame, models: pd.DataFrame, metric: str) -> PlannerPair:
    """The picker's pick and runner-up (picker.rank at the Pick page's default weights and floors) first, then the
    other models with judge values on `metric` by raw mean; the judge's first two when the picker has no two
    candidates measured on `metric`."""
    measured = ranked_models(scores, metric)
    result = picker.rank(scores, models, picker.default_spec())
    top = picker.candidates_in_order(result)[:2]
    label = readmodel.METRICS[metric].label
    if len(top) < 2 or not set(top) <= set(measured):
        return PlannerPair(measured, f"The picker has no two candidates with judge values on {label}: A and B "
                                     f"default to the judge's first two on {label}.")
    order = top + [m for m in measured if m not in top]
    if result.pick == top[0]:
        role = "recommended pick" if result.recommended else "leader (not recommended: it does not beat the best baseline)"
        why = f"{top[0]} is the picker's {role} and {top[1]} its runner-up"
    else:
        why = f"No candidate clears the default floors; {top[0]} and {top[1]} are the picker's first two by weighted score"
    return PlannerPair(order, f"{why} (Pick a generator's default weights and floors, every domain): A and B default to "
                              f"the two the decision is between, not to the judge's ranking on {label}.")


def paired(scores: pd.DataFrame, gold: pd.DataFrame, uncertainty: dict[int, float], metric: str, model_a: str,
           model_b: str) -> pd.DataFrame:
    """Per instance both models answered (on the metric's mode): the judge's and gold difference A - B, the summed
    uncertainty, both response ids and the domain; undetermined judge values are the model's judge mean."""
    mode = {"rejection": "gap", "conflict_recognition": "conflict"}.get(metric)
    scoped = scores[scores["mode"] == mode] if mode else scores

    def side(model: str) -> pd.DataFrame:
        mine = scoped[scoped["model"] == model].merge(gold[["response_id", metric]].rename(columns={metric: "gold"}),
                                                      on="response_id", how="left")
        judged = mine[metric].astype(float)
        return mine.assign(f=judged.fillna(judged.mean() if judged.notna().any() else 0.5),
                           u=mine["response_id"].map(uncertainty).fillna(0.25)).set_index("instance_uid")

    a, b = side(model_a), side(model_b)
    shared = a.index.intersection(b.index).sort_values()
    return pd.DataFrame({"instance_uid": shared, "domain": a.loc[shared, "domain"].to_numpy(),
                         "response_a": a.loc[shared, "response_id"].to_numpy(int),
                         "response_b": b.loc[shared, "response_id"].to_numpy(int),
                         "judged": (a.loc[shared, "f"] - b.loc[shared, "f"]).to_numpy(float),
                         "gold": (a.loc[shared, "gold"] - b.loc[shared, "gold"]).to_numpy(float),
                         "uncertainty": (a.loc[shared, "u"] + b.loc[shared, "u"]).to_numpy(float)})


def plan_gold_budget(engine: Engine, run_ids: Sequence[int], judge: str, metric: str, model_a: str, model_b: str,
                     seed: int = 0) -> GoldPlan:
    """Read the runs under `judge`, plan how many more gold labels separate model_a from model_b on `metric` at
    alpha = 0.05, and draw the items (seeded Poisson draw with the plan's probabilities). Reads only."""
    version = readmodel.gold_version(engine)
    uncertainty: dict[int, float] = {}
    for run_id in run_ids:
        uncertainty |= readmodel.response_uncertainty(engine, run_id)
    gold = gold_labels(engine, list(run_ids))
    table = paired(readmodel.load_scores(engine, run_ids, judge), readmodel.gold_values(gold), uncertainty, metric,
                   model_a, model_b)
    population = tuple((int(r), str(d)) for side in ("response_a", "response_b")
                       for r, d in zip(table[side], table["domain"], strict=True))
    base = GoldPlan(tuple(run_ids), judge, metric, model_a, model_b, len(table), int(table["gold"].notna().sum()),
                    None, version=version, population=population,
                    labeled_ids=tuple(r for r, _ in population if r in gold))
    if len(table) < 2:
        return base
    pairs = gold_budget.Pairs.of(table["judged"], table["gold"], table["uncertainty"])
    result = gold_budget.plan(pairs)
    chosen = gold_budget.draw(result, pairs.labeled, seed)
    items = [PlanItem(str(row.instance_uid), str(row.domain), int(row.response_a), int(row.response_b),
                      float(result.probabilities[i]), float(row.judged))
             for i, row in zip(chosen, table.iloc[chosen].itertuples(), strict=True)]
    return replace(base, plan=result, items=items)


def enqueue_plan(engine: Engine, principal: Principal | None, plan: GoldPlan,
                 experts: list[str] | None = None) -> SampleReport:
    """Put the plan's items into the experts' gold queue: both responses of each item to the two least-loaded experts
    covering its domain, with the item's inclusion probability, and record probability 1 for the population's
    responses sampled before (the module's note: unbiased across the two draws). Re-checks the role server-side and refuses a plan
    read at an older gold-label version (labels or draws since then change what to label)."""
    authorize(engine, principal, "draw_gold_sample")
    if readmodel.gold_version(engine) != plan.version:
        raise ValueError("plan: the gold labels or the queue changed since this plan was made; plan again")
    if not plan.items:
        raise ValueError("plan: no items to label")
    pool = {name: set(doms) for name, doms in active_experts(engine).items() if experts is None or name in experts}
    if len(pool) < 2:
        raise ValueError("experts: at least two active experts are needed (each response is labelled twice)")
    reachable = [r for r, domain in plan.population if len(_covering(pool, domain)) >= 2]
    before = (_assigned(engine, reachable) | set(plan.labeled_ids)) & set(reachable)
    covered = [item for item in plan.items if len(_covering(pool, item.domain)) >= 2]
    chosen = [(rid, item.domain) for item in covered for rid in (item.response_a, item.response_b) if rid not in before]
    probability = {rid: item.probability for item in covered for rid in (item.response_a, item.response_b)}
    batch = f"{PLAN_BATCH}-{plan.metric}-{datetime.now().strftime('%Y%m%d%H%M%S%f')}"
    assignments = assign_pairs(chosen, probability, pool, batch)
    write_assignments(engine, design_rows(before, batch) + assignments)
    uncovered: dict[str, int] = {}
    for item in plan.items:
        if item not in covered:
            uncovered[item.domain] = uncovered.get(item.domain, 0) + 2
    return SampleReport(len(chosen), len(assignments), batch, {f"{plan.model_a} vs {plan.model_b}": len(covered)},
                        dict(sorted(uncovered.items())))


def _assigned(engine: Engine, response_ids: list[int]) -> set[int]:
    """Which of these responses already sit in some expert's gold queue (labelled or not)."""
    with Session(engine) as session:
        rows = session.exec(select(Assignment.target_id).where(Assignment.kind == "gold_label",
                                                               col(Assignment.target_id).in_(response_ids))).all()
    return set(rows)


def plan_summary(plan: GoldPlan) -> str:
    """What a product owner can act on: the next batch, when the labelling stops, and the promise (issue 40)."""
    p = plan.plan
    who = f"{plan.model_a} vs {plan.model_b}"
    if p is None:
        return f"{who}: fewer than 2 instances both models answered on this metric; nothing to plan."
    if p.stop == "first labels":
        return (f"{who}: label a first uniform batch of {p.more} instances ({2 * (p.more or 0)} responses) so that "
                f"{gold_budget.FIRST} are labelled; the planner states its power from them. This draw picked "
                f"{len(plan.items)}.")
    shown = f"corrected difference {p.estimate:+.3f} [{p.low:+.3f}, {p.high:+.3f}] on {p.labeled} labelled instances"
    if p.separated:
        return f"{who}: the labelled instances already separate the two ({shown}); stop labelling."
    promise = (f"if the true difference is at least {p.detectable:.2f}, labelling in batches of {gold_budget.BATCH} "
               f"up to all {p.budget} remaining instances separates the two with at least {p.target_power:.0%} power"
               if p.detectable is not None else
               f"no difference up to {gold_budget.DIFFERENCES[-1]:.2f} reaches {p.target_power:.0%} power with the "
               f"{p.budget} remaining instances")
    odds = (f"Over the uncertainty of the difference the expected power is {p.expected_power:.0%} "
            f"(about {p.expected_labels:.0f} more instances expected before it stops).")
    if p.more is None:
        return (f"{who}: not reachable with this budget ({shown}): the remaining budget's expected power is below "
                f"{gold_budget.FUTILITY:.0%}, so labelling stops here. {promise.capitalize()}.")
    return (f"{who}: label the next {p.more} instances ({2 * p.more} responses, each labelled by two experts), then "
            f"plan again ({shown}). Promise: {promise} (α = {p.alpha:g}, a 99.9% interval at interim looks). {odds} "
            f"Labelling stops when the two separate or when the expected power falls below "
            f"{gold_budget.FUTILITY:.0%}. This draw picked {len(plan.items)}.")


def plan_table(plan: GoldPlan) -> pd.DataFrame:
    """The drawn items as a table: instance, domain, the two response ids, the judge's difference, probability."""
    return pd.DataFrame([{"instance": i.instance_uid, "domain": i.domain, "response A": i.response_a,
                          "response B": i.response_b, "judge A − B": i.judged, "inclusion probability": i.probability}
                         for i in plan.items],
                        columns=["instance", "domain", "response A", "response B", "judge A − B",
                                 "inclusion probability"])


def decided_metric(scores: pd.DataFrame, metrics: Sequence[str]) -> str:
    """The planner's default metric: the first of `metrics` the judge decided on some response (a metric it left
    undetermined everywhere has no disagreement to plan from), else the first."""
    return next((m for m in metrics if m in scores and scores[m].notna().any()), metrics[0])
