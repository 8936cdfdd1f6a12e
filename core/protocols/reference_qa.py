"""Reference-answer QA: public benchmarks with gold answers (open QA, MCQ, unanswerable), with or without documents."""

from __future__ import annotations

from core.protocols import register
from core.protocols.base import Condition, Protocol, needs

REFERENCE_QA = register(Protocol(
    name="reference_qa",
    title="Reference-answer QA",
    description="Questions with gold answers (HotpotQA, MMLU, MedQA, DomainRAG, LIT-RAGBench, RGB, RAMDocs, CRAG, "
                "FollowRAG, IFEval); scored against the reference, language-aware.",
    required={"reference": needs("reference", "a reference_qa instance needs a reference (answers or MCQ choices)")},
    conditions=(
        Condition("", "the documents in their stored order"),
        Condition("closed_book", "no documents: the question alone", {"documents": "none"}),
    ),
    metrics=("exact_match", "strict_exact_match", "token_f1", "rouge_l", "mcq_accuracy", "all_gold_no_wrong",
             "correctness", "consistency", "rejection"),
    aggregates=("accuracy",),
    views=("leaderboard",),
))
