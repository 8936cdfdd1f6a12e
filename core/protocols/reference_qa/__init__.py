"""Reference-answer QA: public benchmarks with gold answers (open QA, MCQ, unanswerable), with or without documents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.metrics import BENCHMARK_MEASURES
from core.protocols import register
from core.protocols.base import Condition, Prompt, Protocol, View, needs
from core.protocols.prompting import InstanceView, reference_messages

RGB_PASSAGES = 5
NOISE_RATIO_CONDITIONS = (
    *(Condition(f"noise_{round(rate * 100)}", f"RGB's setting: {RGB_PASSAGES} passages, noise ratio {rate}",
                {"passages": RGB_PASSAGES, "noise_rate": rate}) for rate in (0.0, 0.2, 0.4, 0.6, 0.8)),
    Condition("negatives_only", f"RGB's rejection setting: {RGB_PASSAGES} noise passages, no answer-bearing one",
              {"passages": RGB_PASSAGES, "noise_rate": 1.0}),
)


def reference_prompt(instance: InstanceView, documents: Sequence[Any], condition: Condition) -> Prompt:
    """The neutral answering prompt (core.protocols.prompting.reference_messages); no extra prompt_meta."""
    return reference_messages(instance, documents, condition.settings.get("policy")), {}


REFERENCE_QA = register(Protocol(
    name="reference_qa",
    title="Reference-answer QA",
    description="Questions with gold answers (HotpotQA, MMLU, MedQA, DomainRAG, LIT-RAGBench, RGB, RAMDocs, CRAG, "
                "FollowRAG, IFEval); scored against the reference, language-aware.",
    required={"reference": needs("reference", "a reference_qa instance needs a reference (answers or MCQ choices)")},
    render=reference_prompt,
    conditions=(
        Condition("", "the documents as stored (HTML as HTML), in the run's order"),
        Condition("closed_book", "no documents: the question alone", {"documents": "none"}),
        Condition("html_as_text", "HTML documents converted to text, tables as Markdown", {"html": "text"}),
        Condition("gold_first", "supporting documents first", {"order": "support_first"}),
        Condition("gold_middle", "supporting documents in the middle", {"order": "support_middle"}),
        Condition("gold_last", "supporting documents last", {"order": "support_last"}),
        Condition("shuffled", "documents shuffled with the run's seed", {"order": "shuffle"}),
        Condition("no_noise", "noise documents dropped", {"noise": 0}),
        Condition("documents_first", "told to prioritise the documents over prior knowledge", {"policy": "documents"}),
        Condition("prior_knowledge", "told it may rely on prior knowledge", {"policy": "prior_knowledge"}),
        *NOISE_RATIO_CONDITIONS,
    ),
    metrics=("exact_match", "strict_exact_match", "token_f1", "rouge_l", "mcq_accuracy", "all_gold_no_wrong",
             "correctness", "consistency", "rejection", "constraint", *BENCHMARK_MEASURES),
    aggregates=("loose_ias", "strict_ias", "instruction_score"),
    headline=("correctness",),
    page_views=(View("Instructions followed, beside the answer", "core.protocols.reference_qa.views:instruction_view"),
                View("Each benchmark's own measures", "core.protocols.reference_qa.views:benchmark_view")),
))
