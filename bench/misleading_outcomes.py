"""Synthetic RAG-Stress outcomes (the frame analysis.outcomes returns) at any scale, for the report's benchmark and its
golden tests: per dataset, models answer questions under every condition with a model-specific skill and
susceptibility; a share of answers is undetermined (a metric not ok: NaN, counted in its state), some MCQ letters are
unparseable, and some responses are missing (a question a model never answered under a condition)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.protocols.misleading_evidence import CLEAN, CLOSED_BOOK, MISLEADING_CONDITIONS
from core.protocols.misleading_evidence.analysis import OUTCOME_COLUMNS

CONDITIONS = [CLOSED_BOOK, CLEAN, *MISLEADING_CONDITIONS]
# the paper's datasets (RAG-Stress: TriviaQA-RC, HotpotQA, SearchQA, English and Chinese MedQA)
DATASETS = {"TriviaQA (en)": ("RAG-Stress TriviaQA", "en", "open"), "HotpotQA (en)": ("RAG-Stress HotpotQA", "en", "open"),
            "SearchQA (en)": ("RAG-Stress SearchQA", "en", "open"), "MedQA (en)": ("RAG-Stress MedQA", "en", "mcq"),
            "MedQA (zh)": ("RAG-Stress MedQA", "zh", "mcq")}
# non-ok statuses an undetermined answer carries (verdict statuses; None: no verdict of the judge)
UNDETERMINED = np.array(["error", "skipped", "not_applicable", None], dtype=object)


def synthetic_outcomes(n_models: int, n_questions: int, n_datasets: int = 5, *, seed: int = 0,
                       undetermined: float = 0.02, unparseable: float = 0.01, missing: float = 0.01) -> pd.DataFrame:
    """outcomes() of `n_models` models on `n_questions` questions of each of the first `n_datasets` paper datasets under
    every condition, sorted as outcomes() sorts; the shares are per response."""
    rng = np.random.default_rng(seed)
    parts = [_dataset(rng, name, n_models, n_questions, undetermined, unparseable, missing)
             for name in list(DATASETS)[:n_datasets]]
    frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=OUTCOME_COLUMNS)
    return frame.reindex(columns=OUTCOME_COLUMNS).sort_values(["dataset", "model", "instance_uid", "condition"],
                                                              ignore_index=True)


def _dataset(rng: np.random.Generator, name: str, n_models: int, n_questions: int, undetermined: float,
             unparseable: float, missing: float) -> pd.DataFrame:
    """One dataset's outcomes: every (model, question, condition), less the missing responses."""
    domain, language, answer_type = DATASETS[name]
    models, questions, conditions = np.meshgrid(np.arange(n_models), np.arange(n_questions), np.arange(len(CONDITIONS)),
                                                indexing="ij")
    models, questions, conditions = models.ravel(), questions.ravel(), conditions.ravel()
    skill = rng.uniform(0.3, 0.9, n_models)[models]
    misleading, documents = conditions >= 2, (conditions >= 2) & (conditions < 5)  # CONDITIONS' order
    susceptible = rng.uniform(0.05, 0.6, n_models)[models] * np.where(documents, 1.25, 1.0)
    correct = rng.random(len(models)) < np.where(misleading, skill * (1 - susceptible), skill)
    designated = ~correct & (rng.random(len(models)) < np.where(misleading, 0.8, 0.3))
    status = np.full(len(models), "ok", dtype=object)
    unknown = rng.random(len(models)) < undetermined
    status[unknown] = rng.choice(UNDETERMINED, unknown.sum())
    if answer_type == "mcq":
        letter_lost = ~unknown & (rng.random(len(models)) < unparseable)
        status[letter_lost] = "unparseable"
        correct &= ~letter_lost
    known = np.isin(status, ["ok", "unparseable"])
    frame = pd.DataFrame({
        "judge": "heuristic", "dataset": name, "model": np.array([f"model-{m:02d}" for m in range(n_models)])[models],
        "instance_uid": np.array([f"{name[:3].lower()}-{q:05d}" for q in range(n_questions)])[questions],
        "domain": domain, "language": language, "answer_type": answer_type,
        "condition": np.array(CONDITIONS)[conditions], "response_id": np.arange(len(models)) + 1,
        "correct": np.where(known, correct.astype(float), np.nan), "designated": designated.astype(float),
        "unparseable": (status == "unparseable").astype(float), "status": status})
    frame["misled"] = np.where(frame["correct"].notna(), ((frame["designated"] == 1) & (frame["correct"] == 0)),
                               np.nan).astype(float)
    return frame[rng.random(len(frame)) >= missing]
