"""EnterpriseRAG (the protocol of record): query + fused multi-constraint instructions + document bundle, 3 modes."""

from __future__ import annotations

from core.protocols import register
from core.protocols.base import BuildPanel, Condition, MetricModes, Protocol, ProtocolPage, needs
from core.protocols.enterprise_rag.prompt import enterprise_prompt
from core.protocols.paper import PaperTableSpec

ENTERPRISE_RAG = register(Protocol(
    name="enterprise_rag",
    title="EnterpriseRAG",
    description="Six domains x noisy / gap / conflict retrieval; instruction adherence, faithfulness, coverage, "
                "rejection and conflict recognition.",
    required={
        "mode": needs("mode", "an enterprise_rag instance needs a mode (noisy, gap or conflict)"),
        "constraints": needs("constraints", "an enterprise_rag instance needs at least one constraint"),
        "documents": needs("documents", "an enterprise_rag instance needs at least one document"),
    },
    conditions=(Condition("", "the bundle in its stored order (or the run's --order)"),),
    metrics=("constraint", "faithfulness", "coverage", "rejection", "conflict_recognition", "refusal"),
    aggregates=("loose_ias", "strict_ias", "orchestration_gap", "over_abstention"),
    response_scoring="constraints",
    metric_modes=(  # the judged metrics per retrieval mode (no verdict outside them, but coverage's not applicable)
        MetricModes("faithfulness", ("noisy", "gap", "conflict")),
        MetricModes("coverage", ("noisy", "conflict"),
                    outside="gap instance: the documents hold no answer, so there is nothing to cover"),
        MetricModes("rejection", ("gap",)),
        MetricModes("conflict_recognition", ("conflict",)),
        MetricModes("refusal", ("noisy",)),
    ),
    checkers=(f"{__name__}.checkers",),  # its `enterprise:` rule checkers, imported by core.scoring.checkers
    headline=("strict_ias", "faithfulness", "coverage", "rejection", "conflict_recognition"),
    render=enterprise_prompt,
    pages=(  # its results open on the shared Leaderboard; these are its own figures' pages
        ProtocolPage("pages/domains.py", "Domains", ":material/radar:"),
        ProtocolPage("pages/constraint_errors.py", "Constraint errors", ":material/rule:"),
        ProtocolPage("pages/robustness.py", "Robustness", ":material/shield:"),
        ProtocolPage("pages/model_pairs.py", "Model pairs", ":material/compare_arrows:"),
        ProtocolPage("pages/data_quality.py", "Data quality", ":material/verified:"),
    ),
    doc="docs/enterprise_rag.md",
    # its build (uploads, corpus, queries, atomic libraries) is richer than a builder's form: its own tab's renderer
    build_panel=BuildPanel("EnterpriseRAG", "ui.instruction_set_build:instruction_set_tab"),
    composition=f"{__name__}.composition:composition_tables",  # its paper's Tables 5 and 6
    paper_tables=(
        PaperTableSpec("2", "Performance of the models on the noisy subset: RAG quality, IAS and Loose IAS by "
                       "constraint category", "core.protocols.enterprise_rag.paper:table2",
                       {"subset": ("noisy", "gap", "conflict", "all")}),
        PaperTableSpec("8", "Natural versus synthetic instances: means, difference, paired t-test with Cohen's d and "
                       "TOST", "core.protocols.enterprise_rag.paper:table8",
                       {"subset": ("conflict", "noisy", "gap", "all"), "bootstrap": ("paper", "product")}),
    ),
))
