"""The decision a product owner signs: one computation gathers the picker's result, the judge-corrected estimates,
rank-sets, segment differences, each judge's agreement with gold, cost, latency and provenance of the chosen runs
(core.analysis.decision_report renders it; `gauntlet decide` and the Pick a generator button both call `decide`).
Nothing is recomputed in the report: every number it prints is a field of the Decision built here.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import pandas as pd
from sqlalchemy.engine import Engine

import core
from core.analysis import alignment, decision_family, picker, readmodel
from core.analysis.fitness import Fitness, Notice, judge_fitness
from core.analysis.judge_check import certificates_of, fitness_notice, fitness_of
from core.analysis.readmodel import decision_scores as keys
from core.construction.soundness import BenchmarkNotes, benchmark_notes
from core.scoring.summaries import runs_sql

DEFAULT_QUESTION = "Which generator should we put behind our RAG system?"

_PROVENANCE_SQL = """
SELECT r.run_id, r.id AS response_id, r.condition, i.id AS instance_id, i.uid, i.version, i.protocol, i.language,
       i.query, i.reference, i.attributes, s.name AS benchmark_set
FROM response r JOIN instance i ON i.id = r.instance_id
LEFT JOIN benchmark_set_member b ON b.instance_id = i.id LEFT JOIN benchmark_set s ON s.id = b.set_id
WHERE r.status = 'done' AND r.run_id IN ({runs})
"""
_RUNS_SQL = "SELECT id, name, status, code_version, created_at, finished_at FROM run WHERE id IN ({runs}) ORDER BY id"
_AS_OF_SQL = """SELECT MAX(t) FROM (SELECT MAX(finished_at) AS t FROM response WHERE run_id IN ({runs})
UNION ALL SELECT MAX(created_at) AS t FROM annotation) times"""
DATASET_COLUMNS = ["benchmark_set", "instances", "versions", "content_hash", "languages", "protocols", "conditions"]
JUDGE_COLUMNS = ["judge", "dimension", "label", "n_compared", "n_unjudged", "n_error", "kappa", "kappa_low",
                 "kappa_high", "agreement", "note"]


@dataclass
class Decision:
    """Everything the decision report shows, computed once."""

    question: str
    run_ids: tuple[int, ...]
    judge: str
    spec: picker.PickSpec
    result: picker.PickResult
    corrected: pd.DataFrame  # readmodel.load_corrected: raw judge and corrected means with CIs and n
    rank_sets: pd.DataFrame  # picker.rank_sets of the candidates on the weighted gold-decidable metrics
    segments: pd.DataFrame  # picker.segment_differences of the top two candidates
    counts: pd.DataFrame  # readmodel.model_counts: responses and undetermined / error / not applicable counts
    judges: pd.DataFrame  # alignment.judge_vs_gold of every judge of the runs
    judge_fitness: dict[str, tuple[Fitness, Fitness]]  # per judge: fitness from gold, fitness from its stored check
    datasets: pd.DataFrame  # per benchmark set: instances, versions, content hash, languages, protocols, conditions
    runs: pd.DataFrame  # id, name, status, code_version, created_at, finished_at
    prompt_hashes: dict[str, str]
    product_version: str
    generated_at: str
    gold_labels: int
    what_would_change: list[str] = field(default_factory=list)
    fitness: Notice | None = None  # the fitness statement of `judge` (and its warning unless it may decide)
    certificates: list[dict] = field(default_factory=list)  # judge_check.certificates_of: per-aspect verdict rows
    # per protocol: rank-sets of every metric and the top two's segment cells, one Holm correction over all tests
    family: decision_family.Family = field(default_factory=decision_family.Family)
    # built sets' expert sound rates and the LLM-generated instances of the runs (soundness.benchmark_notes)
    data_notes: BenchmarkNotes | None = None


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def prompt_hashes() -> dict[str, str]:
    """sha256 (12 hex) of the prompt sources this product version uses: the generator's prompt builder, the LLM
    judge's system prompts (as judge_check.judge_version) and the heuristic judge's rules."""
    from core.protocols import prompting
    from core.scoring.judges import heuristic, prompts, text

    judge_prompts = "\n".join(getattr(prompts, n) for n in sorted(dir(prompts)) if n.endswith("_SYSTEM"))
    return {"generation prompts": _hash(inspect.getsource(prompting)), "LLM judge prompts": _hash(judge_prompts),
            "heuristic judge rules": _hash(inspect.getsource(heuristic) + inspect.getsource(text))}


def _content_hash(frame: pd.DataFrame) -> str:
    """sha256 of the instances' canonical content (uid, version, query, reference, attributes), in uid order."""
    items = frame.drop_duplicates("instance_id").sort_values(["uid", "version"])
    blob = "\n".join(json.dumps([r["uid"], int(r["version"]), r["query"], r["reference"], r["attributes"]],
                                sort_keys=True, default=str) for r in items.to_dict("records"))
    return _hash(blob)


def datasets(engine: Engine, run_ids: Sequence[int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per benchmark set the runs' instances come from: instances, versions, content hash, languages, protocols and
    conditions; response_id -> condition and language, the segments)."""
    frame = readmodel.read_sql(engine, runs_sql(_PROVENANCE_SQL, run_ids))
    frame["benchmark_set"] = frame["benchmark_set"].fillna("(no set)")
    frame["language"] = frame["language"].fillna("")
    rows = []
    for name, g in frame.groupby("benchmark_set", sort=True):
        versions = sorted({int(v) for v in g["version"]})
        rows.append({"benchmark_set": name, "instances": int(g["instance_id"].nunique()),
                     "versions": ", ".join(f"v{v}" for v in versions), "content_hash": _content_hash(g),
                     "languages": ", ".join(sorted({x or "(unknown)" for x in g["language"]})),
                     "protocols": ", ".join(sorted(set(g["protocol"]))),
                     "conditions": ", ".join(sorted({x or "(none)" for x in g["condition"]}))})
    segments = frame.drop_duplicates("response_id")[["response_id", "condition", "language"]]
    return pd.DataFrame(rows, columns=DATASET_COLUMNS), segments


def judge_rows(engine: Engine, run_ids: Sequence[int], gold: dict) -> tuple[pd.DataFrame, dict]:
    """Each judge of the runs against the gold labels (alignment.judge_vs_gold), and its fitness: from the mean
    kappa against gold, and from its newest stored suite check (judge_check.fitness_of)."""
    rows, fitness = [], {}
    for judge in alignment.judges_for(engine, run_ids):
        agreements = alignment.judge_vs_gold(engine, run_ids, judge, gold)
        rows += [{"judge": judge, "dimension": a.dimension, "label": a.label, "n_compared": a.n_compared,
                  "n_unjudged": a.n_unjudged, "n_error": a.n_error, "kappa": a.kappa, "kappa_low": a.ci_low,
                  "kappa_high": a.ci_high, "agreement": a.agreement, "note": a.note} for a in agreements]
        compared = min((a.n_compared for a in agreements if a.dimension in alignment.AVERAGED_DIMENSIONS), default=0)
        fitness[judge] = (judge_fitness(alignment.average_kappa(agreements), compared), fitness_of(engine, judge))
    return pd.DataFrame(rows, columns=JUDGE_COLUMNS), fitness


def what_would_change(result: picker.PickResult) -> list[str]:
    """The weights and floors that decide the pick: each floor the runner-up fails, and the weighted metrics on which
    the runner-up is ahead (raising their weight would favour it)."""
    ranking = result.ranking[~result.ranking["baseline"]].set_index("model")
    if not result.pick or len(ranking) < 2:
        return []
    others = [m for m in ranking.index if m != result.pick]
    second = ranking.loc[others[0]]
    pick = ranking.loc[result.pick]
    lines = [f"{others[0]} would be eligible without this constraint: {fail}" for fail in second["fails"]]
    ahead = [m for m in result.metrics if pd.notna(second[m]) and pd.notna(pick[m])
             and picker._utility(m, second[m]) > picker._utility(m, pick[m])]
    lines += [f"{others[0]} is ahead on {picker.label(m)} (weight {result.spec.weights.get(m, 0):g}): "
              "a higher weight there favours it" for m in ahead]
    return lines


def gold_ranks(engine: Engine, run_ids: Sequence[int], scores: pd.DataFrame, gold: dict, candidates: Sequence[str],
               metrics: Sequence[str], top: tuple[str, str] | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(picker.rank_sets of the candidates, picker.segment_differences of the top two) on the latest response per
    model and instance, from the gold labels and their recorded probabilities; empty frames without gold labels."""
    from core.store.labels import gold_draws, gold_probabilities

    sets, segments = pd.DataFrame(columns=picker.RANK_SET_COLUMNS), pd.DataFrame(columns=picker.SEGMENT_COLUMNS)
    if not gold:
        return sets, segments
    scoped = readmodel.latest_per_model_instance(scores)
    gold_frame = readmodel.gold_values(gold, gold_draws(engine, list(run_ids)))
    sets = picker.rank_sets(scoped, gold_frame, candidates, metrics, gold_probabilities(engine, list(run_ids)))
    if top:
        segments = picker.segment_differences(scoped, gold_frame, datasets(engine, run_ids)[1], *top, metrics)
    return sets, segments


def as_of(engine: Engine, run_ids: Sequence[int]) -> str:
    """The newest time in the data the decision rests on (the runs' last answer, the last expert label), ISO."""
    value = readmodel.read_sql(engine, runs_sql(_AS_OF_SQL, run_ids)).iloc[0, 0]
    if value is None or pd.isna(value):
        return "(no data)"
    stamp = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return stamp.replace(microsecond=0, tzinfo=None).isoformat(sep=" ") + " UTC"


def decide(engine: Engine, run_ids: Sequence[int], judge: str, spec: picker.PickSpec,
           question: str = DEFAULT_QUESTION, generated_at: str | None = None) -> Decision:
    """The decision for runs under one judge and one PickSpec (reads only); `generated_at` defaults to as_of."""
    from core.store.labels import gold_labels

    run_ids = tuple(sorted(int(r) for r in run_ids))
    every = keys.decision_scores(engine, run_ids, judge)
    scores = every[every["protocol"] == keys.DEFAULT_PROTOCOL]  # the default protocol's: gold labels and counts
    result = picker.rank(every, readmodel.model_catalog(engine), spec, judge=judge)
    gold = gold_labels(engine, list(run_ids))
    corrected = readmodel.load_corrected(engine, run_ids, judge, scores, gold)
    candidates = result.ranking.loc[~result.ranking["baseline"], "model"].tolist()
    top = (result.top_two.a, result.top_two.b) if result.top_two else None
    sets, segments = gold_ranks(engine, run_ids, scores, gold, candidates, picker.gold_metrics(spec), top)
    scoped = readmodel.filter_scores(readmodel.latest_per_model_instance(every), spec.modes, spec.domains)
    tests = decision_family.family(scoped, result.evidence, candidates, result.metrics, top)
    data, _ = datasets(engine, run_ids)
    judges, fitness = judge_rows(engine, run_ids, gold)
    runs = readmodel.read_sql(engine, runs_sql(_RUNS_SQL, run_ids))
    return Decision(question, run_ids, judge, spec, result, corrected, sets, segments, readmodel.model_counts(scores),
                    judges, fitness, data, runs, prompt_hashes(), core.__version__,
                    generated_at or as_of(engine, run_ids), len(gold), what_would_change(result),
                    fitness_notice(engine, judge), certificates_of(engine, list(fitness)), tests,
                    benchmark_notes(engine, run_ids))
