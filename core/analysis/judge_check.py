"""Judge check: a judge against a human-labelled suite of answer pairs, computed as the RAGChecker meta-evaluation does.

The computation follows `data/meta_evaluation/meta_eval.py` of amazon-science/RAGChecker (read at commit 657d54ba,
unchanged at 6091f08c; paper arXiv 2408.08067, Section 4 / Table 2):
- each pair has two answers (model1, model2) and one row per annotator with a preference in -2..2 on correctness,
  completeness and overall (negative: model1 better, positive: model2 better);
- a framework's score for a pair is its score of model2 minus its score of model1; a missing difference is replaced
  by the median of the others; the differences are min-max rescaled to [-2, 2] (which changes no correlation);
- each pair's difference is repeated once per annotator label (280 pairs x 2 = 560 points) and Pearson and Spearman
  are computed against the 560 human labels; the paper reports them x 100;
- the human "sanity check" correlates the first annotator's labels with the second's.

On top of that, this module reports agreement (the sign of the judge's difference against the sign of each human
label: model1 / tie / model2) with Cohen's kappa, 95% CIs (bootstrap over pairs for the correlations, the asymptotic
SE for kappa, clipped to [-1, 1]), and the fitness statement of core.analysis.fitness.

What a judge scores here (the suite has no retrieved documents: the reference answer is the judge's only evidence):
- correctness  = the judge's faithfulness of the answer against the reference (share of the answer's claims the
  reference supports: claim precision, RAGChecker's "precision");
- completeness = the judge's coverage of the reference's claims by the answer (claim recall);
- overall      = F1 of the two (RAGChecker's overall F1).
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as sps
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.analysis import certify as cert
from core.analysis import stats
from core.analysis.certify import f1
from core.analysis.fitness import Fitness, Notice, notice, unmeasured
from core.analysis.published import DIMENSIONS, published_for
from core.config import REPO_ROOT
from core.scoring.judges.base import DocumentView, Judge, JudgeInput, MetricOutcome
from core.store.models import JudgeCheck

LABEL_RANGE = (-2.0, 2.0)
SHARED_DATASETS = REPO_ROOT.parent / "shared" / "datasets"
SUITES: dict[str, Path] = {"ragchecker-meta": SHARED_DATASETS / "ragchecker-meta" / "human_labeled_data.json"}
BOOTSTRAP_RESAMPLES = 1000
SOURCE = "RAGChecker meta-evaluation (Ru et al., arXiv 2408.08067, Sec. 4 / Table 2)"

@dataclass(frozen=True)
class SuitePair:
    """One human-labelled pair: a question, the reference answer, two answers and each annotator's preferences."""

    key: str
    query: str
    reference: str
    answers: tuple[str, str]
    labels: dict[str, tuple[float, ...]]  # dimension -> one preference per annotator, in -2..2
    language: str = "en"


@dataclass(frozen=True)
class AnswerScores:
    """A judge's reference-based scores of one answer (None: the judge could not score it)."""

    correctness: float | None
    completeness: float | None
    overall: float | None
    calls: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class DimensionResult:
    """A judge's figures on one dimension against the human labels."""

    dimension: str
    n_pairs: int
    n_labels: int
    n_missing: int  # pairs the judge could not score (filled with the median for the correlations, as the source)
    pearson: float | None  # None: undefined (one class on a side of a binary dimension)
    pearson_ci: tuple[float, float] | None
    spearman: float | None
    spearman_ci: tuple[float, float] | None
    agreement: float | None
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    n_agreement: int


@dataclass
class CheckResult:
    """Everything `judge check` reports for one judge on one suite."""

    judge: str
    judge_model: str
    prompt_hash: str
    suite: str
    n_pairs: int
    dimensions: list[DimensionResult]
    human: dict[str, dict[str, float]] = field(default_factory=dict)
    fitness: Fitness | None = None
    calls: int = 0
    cost_usd: float = 0.0
    certificates: list[cert.Certificate] = field(default_factory=list)
    labelling: dict[str, Any] = field(default_factory=dict)  # who labelled the suite and the state of each pass
    uncertified: str = ""  # why a suite cannot be certified (e.g. one annotator per item), shown as its fitness

    def figures(self) -> dict[str, Any]:
        """The stored figures: per dimension, the human sanity check, the published anchors and the certificates."""
        return {"dimensions": {d.dimension: _dimension_json(d) for d in self.dimensions}, "human": self.human,
                "source": SOURCE, "calls": self.calls, "cost_usd": self.cost_usd,
                "certification": [c.as_dict() for c in self.certificates], "labelling": self.labelling,
                **({"uncertified": self.uncertified} if self.uncertified else {})}


def _dimension_json(d: DimensionResult) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.__dict__.items()}


# --------------------------------------------------------------------------- the suite format


def suite_path(name: str) -> Path:
    """The file of a named suite, or `name` itself as a path."""
    if name in SUITES:
        return SUITES[name]
    path = Path(name)
    if not path.exists():
        raise FileNotFoundError(f"no suite {name!r}: known suites {', '.join(SUITES)}, or give a JSON / JSONL path")
    return path


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a suite file: a JSON array, or JSONL (one object per line)."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _label(row: dict[str, Any], dimension: str, where: str) -> float:
    value = row.get(f"{dimension}_label")
    if not isinstance(value, int | float) or not LABEL_RANGE[0] <= value <= LABEL_RANGE[1]:
        raise ValueError(f"{where}: {dimension}_label must be a number in -2..2, got {value!r}")
    return float(value)


def _answer(row: dict[str, Any], side: str, where: str) -> str:
    answer = row.get(side)
    text = answer.get("response") if isinstance(answer, dict) else answer
    if not isinstance(text, str):
        raise ValueError(f"{where}: {side} needs a 'response' text")
    return text


def load_suite(name: str, limit: int | None = None) -> list[SuitePair]:
    """The pairs of a suite (rows of one pair by several annotators are merged, in file order); first `limit` pairs."""
    pairs: dict[str, dict[str, Any]] = {}
    for index, row in enumerate(read_rows(suite_path(name)), start=1):
        where = f"row {index}"
        answers = (_answer(row, "model1", where), _answer(row, "model2", where))
        key = str(row.get("instance_id", row.get("query")))
        key = f"{key}:{hashlib.sha256('|'.join(answers).encode()).hexdigest()[:8]}"
        pair = pairs.setdefault(key, {"query": row.get("query", ""), "reference": row.get("gt_answer", ""),
                                      "answers": answers, "labels": {d: [] for d in DIMENSIONS},
                                      "language": row.get("language") or "en"})
        for dimension in DIMENSIONS:
            pair["labels"][dimension].append(_label(row, dimension, where))
    out = [SuitePair(key=k, query=p["query"], reference=p["reference"], answers=p["answers"],
                     labels={d: tuple(v) for d, v in p["labels"].items()}, language=p["language"])
           for k, p in pairs.items()]
    return out[:limit] if limit else out


# --------------------------------------------------------------------------- the meta-evaluation computation


def fill_missing(deltas: Sequence[float | None]) -> np.ndarray:
    """Score differences with a missing one replaced by the median of the others (as meta_eval.py)."""
    arr = np.array([np.nan if d is None else d for d in deltas], dtype=float)
    if np.isnan(arr).all():
        raise ValueError("the judge scored no pair")
    arr[np.isnan(arr)] = np.nanmedian(arr)
    return arr


def rescale(deltas: np.ndarray) -> np.ndarray:
    """Differences min-max rescaled to the labels' [-2, 2], as meta_eval.py does (the same float steps, so equal
    differences tie in Spearman's ranks exactly as in the source)."""
    low, high = float(np.min(deltas)), float(np.max(deltas))
    return deltas if high == low else ((deltas - low) / (high - low) - 0.5) * 4


def normalised(deltas: Sequence[float | None]) -> np.ndarray:
    """meta_eval.py's judge side: missing differences filled with the median, then rescaled to [-2, 2]."""
    return rescale(fill_missing(deltas))


def expand(deltas: np.ndarray, labels: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's difference repeated once per annotator label, beside those labels (meta_eval.py's 560 points)."""
    xs = [d for d, ls in zip(deltas, labels, strict=True) for _ in ls]
    ys = [label for ls in labels for label in ls]
    return np.array(xs, dtype=float), np.array(ys, dtype=float)


def correlations(deltas: np.ndarray, labels: Sequence[Sequence[float]]) -> tuple[float, float]:
    """(Pearson, Spearman) of the judge's differences against the human labels, in [-1, 1]."""
    x, y = expand(deltas, labels)
    return float(sps.pearsonr(x, y)[0]), float(sps.spearmanr(x, y)[0])


def correlation_cis(deltas: np.ndarray, labels: Sequence[Sequence[float]], resamples: int = BOOTSTRAP_RESAMPLES,
                    seed: int = 0) -> tuple[tuple[float, float], tuple[float, float]]:
    """95% percentile-bootstrap CIs of (Pearson, Spearman), resampling pairs (an annotator's labels stay together)."""
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        idx = rng.integers(0, len(deltas), len(deltas))
        x, y = expand(deltas[idx], [labels[i] for i in idx])
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            continue
        draws.append((sps.pearsonr(x, y)[0], sps.spearmanr(x, y)[0]))
    arr = np.clip(np.array(draws, dtype=float), -1.0, 1.0)
    low, high = np.quantile(arr, [0.025, 0.975], axis=0)
    return (float(low[0]), float(high[0])), (float(low[1]), float(high[1]))


def direction(value: float) -> int:
    """-1 (model1 better), 0 (tie), 1 (model2 better)."""
    return int(np.sign(value))


def agreement(deltas: Sequence[float | None], labels: Sequence[Sequence[float]]) -> stats.KappaResult | None:
    """Cohen's kappa and agreement of the judge's preference direction with each human label (scored pairs only)."""
    judge, human = [], []
    for d, ls in zip(deltas, labels, strict=True):
        if d is None:
            continue
        judge += [direction(d)] * len(ls)
        human += [direction(label) for label in ls]
    return stats.cohen_kappa(judge, human) if judge else None


def clip_ci(low: float, high: float) -> tuple[float, float]:
    """An interval kept inside [-1, 1]."""
    return max(-1.0, low), min(1.0, high)


DIRECTIONS = (-1.0, 0.0, 1.0)


def kappa_ci(deltas: Sequence[float | None], labels: Sequence[Sequence[float]], resamples: int = BOOTSTRAP_RESAMPLES,
             seed: int = 0) -> tuple[float, float] | None:
    """95% percentile-bootstrap CI of the agreement kappa, resampling pairs (each keeps all its labels, the unit of the
    published rows' 560 points); None when no resample defines kappa."""
    rater = [None if d is None else float(direction(d)) for d in deltas]
    dirs = [[float(direction(v)) for v in ls] for ls in labels]
    tables = cert.item_tables(rater, dirs, DIRECTIONS).reshape(len(labels), -1)
    counts = np.random.default_rng(seed).multinomial(len(labels), np.full(len(labels), 1 / len(labels)), resamples)
    draws = cert.kappa_of((counts @ tables).reshape(-1, 3, 3), np.eye(3))
    draws = draws[np.isfinite(draws)]
    return clip_ci(*map(float, np.quantile(draws, [0.025, 0.975]))) if len(draws) else None


def dimension_result(dimension: str, deltas: Sequence[float | None], labels: Sequence[Sequence[float]]) -> DimensionResult:
    """The figures of one dimension."""
    filled = normalised(deltas)
    pearson, spearman = correlations(filled, labels)
    p_ci, s_ci = correlation_cis(filled, labels)
    k = agreement(deltas, labels)
    return DimensionResult(
        dimension=dimension, n_pairs=len(deltas), n_labels=sum(map(len, labels)),
        n_missing=sum(d is None for d in deltas), pearson=pearson, pearson_ci=p_ci, spearman=spearman,
        spearman_ci=s_ci, agreement=k.agreement if k else None, kappa=None if k is None or k.degenerate else k.kappa,
        kappa_ci=kappa_ci(deltas, labels) if k and not k.degenerate else None, n_agreement=k.n if k else 0)


def human_sanity(pairs: Sequence[SuitePair]) -> dict[str, dict[str, float]]:
    """First annotator against the second, per dimension (pairs with two labels): Pearson, Spearman, kappa."""
    out = {}
    for dimension in DIMENSIONS:
        two = [p.labels[dimension][:2] for p in pairs if len(p.labels[dimension]) >= 2]
        if len(two) < 3:
            continue
        a, b = np.array([t[0] for t in two]), np.array([t[1] for t in two])
        k = stats.cohen_kappa([direction(v) for v in a], [direction(v) for v in b])
        out[dimension] = {"pearson": float(sps.pearsonr(a, b)[0]), "spearman": float(sps.spearmanr(a, b)[0]),
                          "kappa": k.kappa, "agreement": k.agreement, "n": len(two)}
    return out


# --------------------------------------------------------------------------- scoring answers with a judge


def reference_input(pair: SuitePair, answer: str) -> JudgeInput:
    """The judge's view of one answer: the reference answer is the only document."""
    doc = DocumentView(position=1, doc_uid="reference", title="Reference answer", text=pair.reference)
    return JudgeInput(query=pair.query, mode="noisy", documents=[doc], response=answer, language=pair.language)


def _value(outcome: MetricOutcome) -> float | None:
    return outcome.value if outcome.status == "ok" else None


async def score_pair(judge: Judge, pair: SuitePair) -> tuple[AnswerScores, AnswerScores]:
    """The judge's correctness / completeness / overall of both answers (reference claims extracted once)."""
    claims = await judge.context_claims(reference_input(pair, pair.answers[0]))

    async def one(answer: str) -> AnswerScores:
        item = reference_input(pair, answer)
        faith = await judge.faithfulness(item)
        cover = await judge.coverage(item, claims)
        p, r = _value(faith), _value(cover) if claims.status == "ok" else None
        return AnswerScores(p, r, f1(p, r), faith.calls + cover.calls, faith.cost_usd + cover.cost_usd)

    first, second = await asyncio.gather(one(pair.answers[0]), one(pair.answers[1]))
    return AnswerScores(first.correctness, first.completeness, first.overall, calls=first.calls + claims.calls,
                        cost_usd=first.cost_usd + claims.cost_usd), second


def pair_delta(scores: tuple[AnswerScores, AnswerScores], dimension: str) -> float | None:
    """model2's score minus model1's on a dimension (None when either is missing)."""
    a, b = getattr(scores[0], dimension), getattr(scores[1], dimension)
    return None if a is None or b is None else b - a


async def score_suite(judge: Judge, pairs: Sequence[SuitePair], concurrency: int = 8) -> list[tuple[AnswerScores, AnswerScores]]:
    """Every pair scored by the judge (at most `concurrency` pairs at once)."""
    gate = asyncio.Semaphore(concurrency)

    async def bounded(pair: SuitePair) -> tuple[AnswerScores, AnswerScores]:
        async with gate:
            return await score_pair(judge, pair)

    return list(await asyncio.gather(*(bounded(p) for p in pairs)))


# --------------------------------------------------------------------------- the judge's version


def judge_version(judge: Judge) -> tuple[str, str]:
    """(model, prompt hash): the model behind the judge and a hash of the prompts (LLM) or rule source (heuristic)."""
    from core.scoring.judges import heuristic, prompts, text

    client = getattr(judge, "client", None)
    config = getattr(client, "config", None)
    if config is None:
        blob = inspect.getsource(heuristic) + inspect.getsource(text)
        return judge.name, hashlib.sha256(blob.encode()).hexdigest()[:12]
    blob = "\n".join(getattr(prompts, n) for n in sorted(dir(prompts)) if n.endswith("_SYSTEM"))
    return config.model_name, hashlib.sha256(blob.encode()).hexdigest()[:12]


# --------------------------------------------------------------------------- the check, stored


async def check_judge(judge: Judge, suite: str, pairs: Sequence[SuitePair]) -> CheckResult:
    """Score the suite with the judge and compute its figures against the human labels."""
    scores = await score_suite(judge, pairs)
    dims = [dimension_result(d, [pair_delta(s, d) for s in scores], [p.labels[d] for p in pairs]) for d in DIMENSIONS]
    model, prompt_hash = judge_version(judge)
    result = CheckResult(judge=judge.name, judge_model=model, prompt_hash=prompt_hash, suite=suite,
                         n_pairs=len(pairs), dimensions=dims, human=human_sanity(pairs),
                         calls=sum(a.calls + b.calls for a, b in scores),
                         cost_usd=sum(a.cost_usd + b.cost_usd for a, b in scores))
    result.certificates = certify_pairs(pairs, scores)
    result.fitness = suite_fitness(result.figures(), [])
    return result


def baseline_deltas(pairs: Sequence[SuitePair]) -> dict[str, list[float]]:
    """Per baseline, model2's score minus model1's (the reference answer is this suite's only passage)."""
    return {name: [fn(p.answers[1], p.reference) - fn(p.answers[0], p.reference) for p in pairs]
            for name, fn in cert.BASELINE_SCORERS.items()}


def certify_pairs(pairs: Sequence[SuitePair], scores: Sequence[tuple[AnswerScores, AnswerScores]],
                  resamples: int = cert.RESAMPLES) -> list[cert.Certificate]:
    """Per dimension, the judge's preference against the annotators' model1 / tie / model2 (as they labelled it)."""
    base = baseline_deltas(pairs)
    return [cert.certify(d, [pair_delta(s, d) for s in scores],
                         [tuple(float(direction(v)) for v in p.labels[d]) for p in pairs], base, DIRECTIONS,
                         resamples=resamples) for d in DIMENSIONS]


def suite_fitness(figures: dict[str, Any], biases: Sequence[str]) -> Fitness:
    """A stored check's fitness by the rule relative to the suite's humans (docs/judges.md): the weakest aspect's
    verdict, capped at "fit to explore" by a detected bias; undetermined for a check stored before certification."""
    certificates = figures.get("certification")
    if not certificates:
        return Fitness("undetermined", figures.get("uncertified")
                       or "stored before certification against the suite's humans: re-run the check")
    label, reason = cert.summary(certificates)
    if biases and label == cert.DECIDE:
        return Fitness(cert.EXPLORE, f"{reason}, but biased: {', '.join(biases)}")
    return Fitness(label, reason)


def latest_checks(engine: Engine, kind_prefix: str = "") -> list[JudgeCheck]:
    """The newest stored check per (judge, version, kind, suite), newest first; kinds starting with `kind_prefix`."""
    with Session(engine) as session:
        rows = session.exec(select(JudgeCheck).order_by(col(JudgeCheck.id).desc())).all()
    seen, out = set(), []
    for row in rows:
        key = (row.judge, row.judge_model, row.prompt_hash, row.kind, row.suite)
        if row.kind.startswith(kind_prefix) and key not in seen:
            seen.add(key)
            out.append(row)
    return out


def framework_deltas(rows: Sequence[dict[str, Any]], framework: str, dimension: str) -> list[float | None]:
    """A framework's published model2 - model1 scores per pair from a meta-evaluation baseline file (e.g. RAGChecker's
    baseline_ragchecker.json, whose rows carry model1/model2[framework][<dimension>_label])."""
    out = []
    for row in rows:
        a, b = row["model1"][framework].get(f"{dimension}_label"), row["model2"][framework].get(f"{dimension}_label")
        out.append(None if a is None or b is None else float(b) - float(a))
    return out


def stored_biases(engine: Engine, judge: str, judge_model: str, prompt_hash: str) -> list[str]:
    """The biases the newest stored probes of this judge version detected."""
    rows = [r for r in latest_checks(engine, "probe:")
            if (r.judge, r.judge_model, r.prompt_hash) == (judge, judge_model, prompt_hash)]
    return sorted({b for r in rows for b in r.figures.get("biases", [])})


def with_probe_biases(engine: Engine, result: CheckResult) -> CheckResult:
    """The result with its fitness recomputed from the overall kappa and the stored probes of the same version."""
    biases = stored_biases(engine, result.judge, result.judge_model, result.prompt_hash)
    result.fitness = suite_fitness(result.figures(), biases)
    return result


def suite_checks_of(engine: Engine, judge: str) -> list[JudgeCheck]:
    """The judge's newest stored suite check per suite, for its newest checked version (model and prompt hash),
    newest first."""
    checks = [r for r in latest_checks(engine, "suite") if r.judge == judge]
    if not checks:
        return []
    version = (checks[0].judge_model, checks[0].prompt_hash)
    return [r for r in checks if (r.judge_model, r.prompt_hash) == version]


def fitness_of(engine: Engine, judge: str) -> Fitness:
    """The fitness of a judge id ('heuristic', 'llm:<model>') from the newest stored check on each suite of its newest
    version and the probes of that version: the weakest suite's label, every suite's per-aspect verdicts as the
    reason; undetermined when it was never checked (for the Leaderboard, the picker and the decision report)."""
    checks = suite_checks_of(engine, judge)
    if not checks:
        return unmeasured(judge)
    biases = stored_biases(engine, checks[0].judge, checks[0].judge_model, checks[0].prompt_hash)
    per_suite = [(c, suite_fitness(c.figures, biases)) for c in checks]
    label = min((f.label for _, f in per_suite), key=cert.ORDER.index)
    return Fitness(label, " | ".join(f"{f.reason}; suite {c.suite}, checked {c.created_at:%Y-%m-%d}"
                                     for c, f in per_suite))


def certificate_rows(checks: Sequence[JudgeCheck]) -> list[dict[str, Any]]:
    """Per stored check, aspect and rater (the judge, the second annotator row, each baseline): kappa with its 95%
    bootstrap interval, n, the test's one-sided lower bound and the aspect's verdict; the rows every surface shows
    (Judge alignment, the decision report, the verdict table of the Leaderboard and the picker)."""
    rows = []
    for c in checks:
        for cf in c.figures.get("certification", []):
            pair = cf.get("pair_row", "human vs human")
            raters = [("judge", cf["judge"], cf["gap_low"]), (pair, cf["human"], None),
                      *((f"baseline: {b['rater']}", b, cf["beats"].get(b["rater"])) for b in cf["baselines"])]
            for name, r, low in raters:
                missing = name == pair and bool(cf.get("note"))
                rows.append({"judge": c.judge, "suite": c.suite, "aspect": cf["aspect"], "verdict": cf["verdict"],
                             "rater": name, "kappa": None if missing else r["kappa"],
                             "ci": None if missing or r["ci"] is None else tuple(r["ci"]),
                             "lower_bound": None if cf.get("note") and name == "judge" else low,
                             "margin": cf["margin"], "n_items": r["n_items"], "n_labels": r["n_labels"],
                             "note": cf.get("note", "") if missing else "", "prompt_hash": c.prompt_hash,
                             "checked": c.created_at})
    return rows


def certificates_of(engine: Engine, judges: Sequence[str]) -> list[dict[str, Any]]:
    """certificate_rows of each judge's newest check on each suite (the decision report's verdict table)."""
    return [row for judge in judges for row in certificate_rows(suite_checks_of(engine, judge))]


def verdict_rows(engine: Engine, judge: str) -> list[dict[str, Any]]:
    """The judge's per-suite, per-aspect verdicts from its newest check on each suite, with the judge's kappa, the
    second annotator row's kappa (or the state that stands in for it) and the best baseline's kappa."""
    out = []
    for c in suite_checks_of(engine, judge):
        for cf in c.figures.get("certification", []):
            base = [b for b in cf["baselines"] if b["kappa"] is not None]
            best = max(base, key=lambda b: b["kappa"], default=None)
            out.append({"suite": c.suite, "aspect": cf["aspect"], "verdict": cf["verdict"],
                        "judge_kappa": cf["judge"]["kappa"], "pair_row": cf.get("pair_row", "human vs human"),
                        "pair_kappa": None if cf.get("note") else cf["human"]["kappa"], "note": cf.get("note", ""),
                        "best_baseline": best["rater"] if best else "", "best_baseline_kappa": best["kappa"] if best else None,
                        "n_items": cf["judge"]["n_items"], "checked": c.created_at})
    return out


# --------------------------------------------------------------------------- beside the published figures

NOT_PUBLISHED = "not published"


def _pair_cell(pearson: float, spearman: float) -> str:
    return f"{pearson:.2f} / {spearman:.2f}"


def _ci_cell(ci: Sequence[float] | None) -> str:
    return "" if ci is None else f" [{ci[0] * 100:.1f}, {ci[1] * 100:.1f}]"


def _measured_cell(d: dict[str, Any]) -> str:
    return (f"{d['pearson'] * 100:.2f}{_ci_cell(d['pearson_ci'])} / "
            f"{d['spearman'] * 100:.2f}{_ci_cell(d['spearman_ci'])}")


def _agreement_cell(d: dict[str, Any]) -> str:
    if d.get("agreement") is None:
        return "no scored pair"
    kappa = "κ undefined" if d.get("kappa") is None else f"κ {d['kappa']:.2f}{_kappa_ci(d.get('kappa_ci'))}"
    return f"{d['agreement'] * 100:.1f}%, {kappa} (n {d['n_agreement']})"


def _kappa_ci(ci: Sequence[float] | None) -> str:
    return "" if ci is None else f" [{ci[0]:.2f}, {ci[1]:.2f}]"


def comparison_rows(suite: str, measured: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, str]]:
    """The published rows for `suite`, then each measured judge (label, stored figures["dimensions"]): Pearson /
    Spearman x 100 per dimension (measured ones with 95% CIs) and overall agreement and kappa; [] when the suite has
    no published figures."""
    published = published_for(suite)
    if published is None:
        return []
    _, table = published
    rows = [{"Framework": r.framework, "Metric": r.metric,
             **{f"{d} (P / S)": _pair_cell(*r.of(d)) for d in DIMENSIONS}, "Overall agreement, κ": NOT_PUBLISHED}
            for r in table]
    rows += [{"Framework": f"{label} (this product)", "Metric": "claim precision / recall / F1 vs the reference",
              **{f"{d} (P / S)": _measured_cell(dims[d]) for d in DIMENSIONS},
              "Overall agreement, κ": _agreement_cell(dims["overall"])} for label, dims in measured]
    return rows


def fitness_notice(engine: Engine, judge: str) -> Notice:
    """The fitness statement and warning every surface shows beside the numbers of `judge` (fitness_of + notice)."""
    return notice(judge, fitness_of(engine, judge))


async def check_mtrag(judge: Judge, limit: int | None = None) -> CheckResult:
    """The judge certified on the mtRAG human evaluations, with passages and the conversation as annotators saw it."""
    from core.analysis import mtrag_suite

    items = mtrag_suite.load(limit=limit)
    scored = await mtrag_suite.score_all(judge, items)
    model, prompt_hash = judge_version(judge)
    result = CheckResult(judge=judge.name, judge_model=model, prompt_hash=prompt_hash, suite=mtrag_suite.NAME,
                         n_pairs=len(items), dimensions=[], calls=sum(c for _, c, _ in scored),
                         cost_usd=sum(c for _, _, c in scored))
    result.certificates = mtrag_suite.certify_items(items, [s for s, _, _ in scored])
    result.fitness = suite_fitness(result.figures(), [])
    return result


async def check_hard_set(judge: Judge, limit: int | None = None) -> CheckResult:
    """The judge certified on the hard set against its two labelling passes (undetermined until the second exists)."""
    from core.analysis import hard_set

    every = hard_set.load_items()
    labels, items = hard_set.load_labels(every), every[:limit] if limit else every
    scored = await hard_set.score_all(judge, items)
    model, prompt_hash = judge_version(judge)
    result = CheckResult(judge=judge.name, judge_model=model, prompt_hash=prompt_hash, suite=hard_set.NAME,
                         n_pairs=len(items), dimensions=[], calls=sum(c for _, c, _ in scored),
                         cost_usd=sum(c for _, _, c in scored))
    result.certificates = hard_set.certify_items(items, [s for s, _, _ in scored], labels)
    result.labelling = hard_set.labelling(items, labels)
    result.fitness = suite_fitness(result.figures(), [])
    return result


SUITE_CHECKS: dict[str, Any] = {"mtrag": check_mtrag, "hard_set": check_hard_set}


def suite_checks() -> dict[str, Any]:
    """The named suites: the product's own, then those the protocols declare (`Protocol.judge_suites`, each check a
    'module:function' resolved on use: a protocol package imports this module)."""
    from core.protocols import judge_suites

    return {**SUITE_CHECKS, **judge_suites()}


def suite_check(name: str) -> Callable[[Judge, int | None], Coroutine[Any, Any, CheckResult]]:
    """The check of a named suite, a 'module:function' name imported now."""
    from core.metrics import resolve_hook

    check: Callable[[Judge, int | None], Coroutine[Any, Any, CheckResult]] = resolve_hook(suite_checks()[name])
    return check
