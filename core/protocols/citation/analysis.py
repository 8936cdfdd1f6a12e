"""The citation protocol's aggregate: citation recall and precision (and exact match where there is a reference) per
model, each mean with its 95% interval, n and the count of every state (the one `breakdown` computation)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis.readmodel.reference import reference_scores
from core.protocols.injection.analysis import breakdown

from . import NAME, PRECISION, RECALL
from .analysis_alce import Agreement


def citation_table(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Citation recall and precision per model with n and the state counts."""
    scores = reference_scores(engine, run_ids, judge, protocol=NAME)
    return pd.concat([breakdown(scores, metric, []) for metric in (RECALL, PRECISION)], ignore_index=True)


def expert_support_table(engine: Engine) -> pd.DataFrame:
    """Per judge that scored citation recall, over every run: its sentence-support verdicts against the experts'
    citation-support labels (agreement %, kappa, n decided, n undecided); empty without such labels."""
    from sqlmodel import Session, select

    from core.store.models import Verdict

    with Session(engine) as session:
        judges = sorted(set(session.exec(select(Verdict.judge).where(Verdict.metric == RECALL).distinct()).all()))
    rows = []
    for judge in judges:
        a = expert_support_agreement(engine, None, judge)
        if a.n or a.undecided:
            rows.append({"Judge": judge, "Agreement %": None if a.agreement is None else round(100 * a.agreement, 1),
                         "κ": None if a.kappa is None else round(a.kappa, 3), "n sentences": a.n,
                         "n undecided": a.undecided})
    return pd.DataFrame(rows, columns=["Judge", "Agreement %", "κ", "n sentences", "n undecided"])


def expert_support_agreement(engine: Engine, run_ids: Sequence[int] | None, judge: str) -> Agreement:
    """The judge's support verdict on each answer sentence (its citation.recall details) against the experts'
    citation-support labels (each expert's latest; 'supported' = 1, 'partial' or 'not' = 0, as ALCE's annotators'
    fully-supported rule): agreement, Cohen's kappa and n over the sentences the judge decided, the rest counted
    (`run_ids` None: every run)."""
    from sqlmodel import Session, col, select

    from core.store.labels import effective_annotations, response_ids_for_runs
    from core.store.models import Verdict

    labels = effective_annotations(engine, "gold_label", response_ids_for_runs(engine, run_ids), "response")
    with Session(engine) as session:
        query = select(Verdict).where(Verdict.judge == judge, Verdict.metric == RECALL)
        if run_ids is not None:
            query = query.where(col(Verdict.run_id).in_(list(run_ids)))
        rows = session.exec(query).all()
    sentences = {v.response_id: (v.details or {}).get("sentences", []) for v in rows}
    judged: list[int | None] = []
    expert: list[int] = []
    for response_id, by_author in labels.items():
        for label in by_author.values():
            for n, value in (label.payload.get("citation_support") or {}).items():
                judged_rows = sentences.get(response_id, [])
                row = judged_rows[int(n) - 1] if int(n) <= len(judged_rows) else {}
                judged.append(None if row.get("supported") is None else int(bool(row["supported"])))
                expert.append(int(value == "supported"))
    return Agreement.of(judged, expert)
