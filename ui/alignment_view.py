"""Tables and sections of the Judge alignment page: every κ, agreement and score names its judge (judge_label) and n."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from core.analysis import stats
from core.analysis.alignment import (
    AVERAGED_DIMENSIONS,
    CROSS_METRICS,
    DIMENSIONS,
    Agreement,
    CategoricalAgreement,
    CrossJudge,
    average_kappa,
)
from core.analysis.judge_check import certificate_rows, comparison_rows
from core.scoring.judges.names import judge_label
from core.store.benchmark import marks_by_response
from core.store.generated import mark_cell
from ui.session import engine

EXPERTS = "experts (inter-annotator)"
SMALL_SAMPLE = f"small sample (n < {stats.SMALL_N})"
OVERALL = "Overall avg. (Strict IAS, rejection, conflict)"


def pct(x: float | None) -> float | None:
    return None if x is None else round(100 * x, 1)


def kappa(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def kappa_ci(low: float | None, high: float | None) -> str:
    """'[low, high]' of a kappa, or '—' when kappa is undefined."""
    return "—" if low is None or high is None else f"[{low:.2f}, {high:.2f}]"


def note(row: Agreement | CategoricalAgreement) -> str:
    """Why kappa is missing, plus the small-sample flag."""
    return " · ".join(x for x in (row.note, SMALL_SAMPLE if row.small_sample else "") if x)


def agreement_row(rater: str, row: Agreement) -> dict:
    """One display row of a dimension's agreement for a rater."""
    return {"Dimension": row.label, "Rater": rater, "κ": kappa(row.kappa), "κ 95% CI": kappa_ci(row.ci_low, row.ci_high),
            "Agreement %": pct(row.agreement), "n compared": row.n_compared, "n unjudged": row.n_unjudged,
            "n error": row.n_error, "Note": note(row)}


def overall_row(rater: str, rows: Sequence[Agreement]) -> dict:
    """The 'Overall avg.' row: mean κ over the averaged dimensions with a defined κ, and the items behind it."""
    used = [r for r in rows if r.dimension in AVERAGED_DIMENSIONS and r.kappa is not None]
    names = ", ".join(DIMENSIONS[r.dimension] for r in used) or "none"
    return {"Dimension": OVERALL, "Rater": rater, "κ": kappa(average_kappa(list(rows))), "κ 95% CI": "—",
            "Agreement %": None, "n compared": sum(r.n_compared for r in used),
            "n unjudged": sum(r.n_unjudged for r in used), "n error": sum(r.n_error for r in used),
            "Note": f"mean κ of {len(used)} of {len(AVERAGED_DIMENSIONS)} dimensions ({names})"}


def agreement_table(human: Sequence[Agreement], by_judge: dict[str, Sequence[Agreement]]) -> pd.DataFrame:
    """Table 9, long form: per dimension the experts' agreement and each judge's against gold, then the overall rows."""
    raters = [(EXPERTS, list(human))] + [(f"{judge_label(j)} vs gold", list(rows)) for j, rows in by_judge.items()]
    rows = [agreement_row(rater, r) for dim in DIMENSIONS for rater, block in raters for r in block if r.dimension == dim]
    rows += [overall_row(rater, block) for rater, block in raters]
    return pd.DataFrame(rows)


def confusion_frame(row: Agreement, judge: str) -> pd.DataFrame:
    """The 2x2 gold x judge table on the compared items."""
    return pd.DataFrame(row.confusion, index=["gold fail", "gold pass"],
                        columns=[f"{judge_label(judge)} fail", f"{judge_label(judge)} pass"])


def verification_table(rows: Sequence[CategoricalAgreement]) -> pd.DataFrame:
    """Expert-expert agreement on verification decisions, one row per verdict."""
    return pd.DataFrame([{"Verdict": r.label, "κ": kappa(r.kappa), "κ 95% CI": kappa_ci(r.ci_low, r.ci_high),
                          "Agreement %": pct(r.agreement), "n": r.n, "Note": note(r)} for r in rows])


def cross_scores_table(cj: CrossJudge) -> pd.DataFrame:
    """Models x (metric, judge) cells 'score % (n=responses)'; '—' where the judge has no value for the model."""
    models = sorted({m for by_model in cj.scores.values() for m in by_model})

    def cell(metric: str, model: str, judge: str) -> str:
        value = cj.scores[metric].get(model, {}).get(judge)
        return "—" if value is None else f"{value:.1f} (n={cj.n[metric][model][judge]})"

    columns = {(CROSS_METRICS[m], judge_label(j)): [cell(m, model, j) for model in models]
               for m in CROSS_METRICS for j in cj.judges}
    return pd.DataFrame(columns, index=pd.Index(models, name="model"))


def cross_stats_table(cj: CrossJudge) -> pd.DataFrame:
    """Per metric: ICC(2,k) with its CI, mean Spearman ρ, how many models and which judges, and the notes."""
    rows = []
    for metric, label in CROSS_METRICS.items():
        icc, rho = cj.icc[metric], cj.spearman[metric]
        rows.append({"Metric": label,
                     "ICC(2,k) [95% CI]": f"{icc.icc:.3f} [{icc.ci_low:.2f}, {icc.ci_high:.2f}]" if icc else "—",
                     "Avg. Spearman ρ": None if rho is None else round(rho, 3),
                     "Models (n)": cj.n_models[metric],
                     "Judges": ", ".join(judge_label(j) for j in cj.judges),
                     "Note": "; ".join(cj.notes[metric])})
    return pd.DataFrame(rows)


def confusion_section(by_judge: dict[str, dict[str, Agreement]]) -> int | None:
    """Judge and dimension pickers, the confusion matrix and the disagreeing items; returns the chosen response id."""
    judge = st.selectbox("Judge", list(by_judge), format_func=judge_label, key="align_judge")
    dim = st.selectbox("Dimension", list(DIMENSIONS), format_func=DIMENSIONS.get, key="align_dim")
    result = by_judge[judge][dim]
    st.caption(f"{judge_label(judge)} vs gold · {result.label}: n compared {result.n_compared}, "
               f"unjudged {result.n_unjudged}, judge errors {result.n_error} (unjudged and errors are not compared)")
    st.dataframe(confusion_frame(result, judge))
    items = pd.DataFrame(result.disagreements, columns=["response", "item", "gold", judge_label(judge)])
    marks = marks_by_response(engine(), [int(r) for r in items["response"]])
    items["generated"] = [mark_cell(marks.get(int(r))) for r in items["response"]]  # the answered item's LLM mark
    st.caption(f"{len(items)} of {result.n_compared} compared items disagree — select one to read it.")
    picked = st.dataframe(items, hide_index=True, on_select="rerun", selection_mode="single-row", key="align_items")
    selected = picked.selection.rows if picked else []
    return int(items.iloc[selected[0]]["response"]) if selected else None


def _ci100(ci: Sequence[float] | None) -> str:
    return "—" if not ci else f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def suite_check_table(checks: Sequence) -> pd.DataFrame:
    """Stored `judge check` results: one row per judge version, suite and dimension, with n and the fitness."""
    rows = []
    for c in checks:
        for dim, d in c.figures["dimensions"].items():
            rows.append({"Judge": judge_label(c.judge), "Fitness": c.fitness, "Suite": c.suite, "Dimension": dim,
                         "Pearson ×100": pct(d["pearson"]),
                         "Pearson 95% CI": _ci100(d["pearson_ci"]), "Spearman ×100": pct(d["spearman"]),
                         "Spearman 95% CI": _ci100(d["spearman_ci"]), "Agreement %": pct(d["agreement"]),
                         "κ": kappa(d["kappa"]), "κ 95% CI": kappa_ci(*(d["kappa_ci"] or (None, None))),
                         "n labels": d["n_labels"], "n agreement pairs": d["n_agreement"],
                         "n unscored pairs": d["n_missing"], "Model": c.judge_model,
                         "Prompt hash": c.prompt_hash, "Checked": c.created_at.strftime("%Y-%m-%d %H:%M")})
    return pd.DataFrame(rows)


def certification_table(checks: Sequence) -> pd.DataFrame:
    """Per stored check and aspect: the judge row, the second annotator row (human vs human, or annotator vs
    annotator where the labellers are not human) and each baseline row (κ with its 95% bootstrap interval over items,
    n), the two tests' lower bounds and the aspect's verdict (judge_check.certificate_rows)."""
    rows = []
    for r in certificate_rows(checks):
        test = ("" if r["lower_bound"] is None
                else f"judge − annotators ≥ {r['lower_bound']:+.2f} (margin −{r['margin']:.2f})" if r["rater"] == "judge"
                else f"judge − baseline ≥ {r['lower_bound']:+.2f}")
        rows.append({"Judge": judge_label(r["judge"]), "Suite": r["suite"], "Aspect": r["aspect"],
                     "Verdict": r["verdict"], "Rater": r["rater"], "κ": kappa(r["kappa"]),
                     "κ 95% CI": r["note"] or kappa_ci(*(r["ci"] or (None, None))),
                     "Lower bound (one-sided 95%)": test, "n items": r["n_items"], "n labels": r["n_labels"],
                     "Prompt hash": r["prompt_hash"]})
    return pd.DataFrame(rows)


def published_table(suite: str, checks: Sequence) -> pd.DataFrame:
    """The figures published for `suite` (cited as facts), with the stored checks of each judge version on it beside
    them (Pearson / Spearman x 100 with 95% CIs, agreement and kappa)."""
    measured = [(f"{judge_label(c.judge)} · {c.prompt_hash}", c.figures["dimensions"]) for c in checks
                if c.suite == suite]
    return pd.DataFrame(comparison_rows(suite, measured))


def probe_table(checks: Sequence) -> pd.DataFrame:
    """Stored probe results: one row per figure, with its CI, n and whether it shows a bias."""
    rows = []
    for c in checks:
        for r in c.figures["rows"]:
            rows.append({"Judge": judge_label(c.judge), "Model": c.judge_model, "Prompt hash": c.prompt_hash,
                         "Probe": c.kind.removeprefix("probe:"), "Suite": c.suite, "Figure": r["figure"],
                         "Value": None if r["value"] is None else round(r["value"], 3),
                         "95% CI": "—" if r["ci_low"] is None else f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]",
                         "n": r["n"], "Bias detected": "yes" if r["bias"] else "no"})
    return pd.DataFrame(rows)


def fitness_line(judge: str, fitness) -> str:
    """One judge's fitness statement as a markdown line."""
    return f"**{judge_label(judge)}**: {fitness.label.upper()} ({fitness.reason})"
