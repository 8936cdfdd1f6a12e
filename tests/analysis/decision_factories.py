"""A synthetic scored run with expert gold labels, for the decision report tests (CLI, page button, browser)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from sqlmodel import Session

from bench.make_synthetic_results import make_results
from core.analysis import readmodel
from core.store.db import make_engine
from core.store.models import Annotation, Assignment

GOLD_AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def decision_db(url: str, n_models: int = 3, n_instances: int = 120, share: float = 0.4, seed: int = 5) -> str:
    """make_results (heuristic judge, baselines), then an adjudicated gold label on `share` of the responses: the
    judge's verdict flipped 15% of the time, recorded as drawn with probability `share`."""
    make_results(url, n_models=n_models, n_instances=n_instances, seed=seed)
    engine = make_engine(url)
    scores = readmodel.load_scores(engine, [1], "heuristic")
    verdicts = readmodel.constraint_verdicts(engine, [1], "heuristic")
    cids = verdicts.groupby("response_id")["cid"].apply(list).to_dict()
    rng = np.random.default_rng(seed)
    rows, assignments = [], []
    for r in scores.to_dict("records"):
        if rng.random() >= share:
            continue
        flip = rng.random() < 0.15
        strict = r["strict_ias"] if not np.isnan(r["strict_ias"]) else float(rng.random() < 0.5)
        passed = bool(strict) != flip
        payload = {"constraints": {c: passed for c in cids.get(r["response_id"], ["c1"])}}
        for metric, item in (("rejection", "valid_refusal"), ("conflict_recognition", "conflict_recognized")):
            if not np.isnan(r[metric]):
                payload[item] = int(bool(r[metric]) != (rng.random() < 0.15))
        rows.append(Annotation(kind="adjudication", target_type="response", target_id=int(r["response_id"]),
                               author="admin", payload=payload, client_token=f"gold-{r['response_id']}",
                               created_at=GOLD_AT))
        assignments.append(Assignment(kind="gold_label", target_id=int(r["response_id"]), assignee="alice",
                                      probability=share, created_at=GOLD_AT))
    with Session(engine) as session:
        session.add_all([*rows, *assignments])
        session.commit()
    engine.dispose()
    return url
