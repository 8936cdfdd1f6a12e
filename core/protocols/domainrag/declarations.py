"""DomainRAG's own metrics, declared (core.metrics): the authors' F1 and ROUGE-L over jieba words
(core.protocols.domainrag.metrics computes them) and the paper's GE judge (core.protocols.domainrag.judge). The
computations are named 'module:function', so this declaration never imports the scoring layer they use."""

from __future__ import annotations

from core.metrics import JUDGED, MetricDeclaration, declare

F1_JIEBA = "domainrag.token_f1_jieba"
ROUGE_L_JIEBA = "domainrag.rouge_l_jieba"
GE_PAPER = "domainrag.ge_paper"
EM_AUTHORS = "domainrag.exact_match_authors"
EMS_AUTHORS = "domainrag.strict_exact_match_authors"
NEEDS_LLM = "the paper's GE needs an LLM judge (score with --judge llm:<model>)"
LONG_ONLY = "the paper's GE scores long answers (conversational and multi-document QA)"

F1_JIEBA_METRIC = declare(MetricDeclaration(
    F1_JIEBA, "F1 (authors', jieba)", "bounded", ("lexical",), compute="core.protocols.domainrag.metrics:f1_jieba",
    description="DomainRAG's evaluator: F1 over the characters of the jieba-segmented, space-joined text"))
ROUGE_L_JIEBA_METRIC = declare(MetricDeclaration(
    ROUGE_L_JIEBA, "ROUGE-L (authors', jieba)", "bounded", ("lexical",),
    compute="core.protocols.domainrag.metrics:rouge_l_jieba",
    description="DomainRAG's evaluator: rouge_chinese ROUGE-L over jieba words"))
EM_AUTHORS_METRIC = declare(MetricDeclaration(
    EM_AUTHORS, "EM (authors', as written)", "bounded", ("lexical",),
    compute="core.protocols.domainrag.metrics:exact_match_authors",
    description="DomainRAG's evaluator: the gold contained in the response with no normalisation; a composite gold "
                "scores the share of its parts contained"))
EMS_AUTHORS_METRIC = declare(MetricDeclaration(
    EMS_AUTHORS, "EMS (authors', as written)", "bounded", ("lexical",),
    compute="core.protocols.domainrag.metrics:strict_exact_match_authors",
    description="DomainRAG's evaluator: the response equal to the gold with no normalisation; a composite gold "
                "scores the share of its parts equal to the response"))
GE_PAPER_METRIC = declare(MetricDeclaration(
    GE_PAPER, "GE (paper: extra information penalised)", "bounded", JUDGED,
    judged="core.protocols.domainrag.judge:ge_paper",
    description="DomainRAG's GPT-4 evaluation: 0-5 / 5 for agreement, coverage and nothing beyond the golden answer"))
