"""The read model: every metric the product reports is computed here, once, from the stored verdicts.

The dashboards, `gauntlet report`, the picker, judge alignment and every export call these functions; nothing here
writes to the database. Per-response scores come from the summary tables that the scoring pipeline's summarise stage
writes (core.scoring.summaries); for a run whose verdicts changed since its summaries were built, the same SELECT runs
inline instead, so a stale summary can never change a number.

The package is split by job: responses (per-response scores and verdicts from the store), scope (metric catalogue,
inputs, prepared scores and filters), bootstrap, leaderboard, breakdowns (domains, constraint errors), robustness,
pairs, data_quality, corrected (gold-label corrections), runs, report, reference (reference-answer protocols) and
protocol_tables (the breakdown tables a protocol package's analysis builds).
Every public name is re-exported here, so `from core.analysis.readmodel import X` keeps working.
"""

from __future__ import annotations

from core.analysis.readmodel.aggregates import aggregate_means, aggregate_state_counts, metric_aggregates
from core.analysis.readmodel.bootstrap import _ci, bootstrap_counts, bootstrap_means, bootstrap_weights
from core.analysis.readmodel.breakdowns import (
    DOMAIN_METRICS,
    domain_heatmap,
    domain_metric_states,
    domain_metrics,
    failing_verdicts,
    failure_rates,
    failure_view,
    modeless_verdicts,
    verdict_totals_text,
)
from core.analysis.readmodel.corrected import (
    CORRECTED_COLUMNS,
    GOLD_METRICS,
    LABELS_ONLY,
    NO_JUDGE_NOTE,
    TARGET_CI_WIDTH,
    corrected_difference,
    corrected_estimates,
    corrected_trust,
    difference_pairs,
    gold_values,
    load_corrected,
    pairs_difference,
    ranking_changes,
    response_uncertainty,
)
from core.analysis.readmodel.data_quality import (
    EQUIVALENCE_METRICS,
    OriginItems,
    evaluated_composition,
    items_composition,
    natural_vs_augmented,
    origin_equivalence,
    origin_items,
    select_items,
)
from core.analysis.readmodel.instructions import (
    INSTRUCTION_METRICS,
    instruction_scores,
    instruction_summary,
    pooled_share,
)
from core.analysis.readmodel.leaderboard import (
    GAP_ASSUMPTION,
    GAP_BOUND_COLUMNS,
    GAP_KEY,
    GAP_LABEL,
    GAP_METHOD,
    GAP_MIN_STRICT,
    LONG_COLUMNS,
    gap_bounds,
    group_positions,
    leaderboard,
    leaderboard_parts,
    leaderboard_states,
    leaderboard_table,
    mean_rows,
)
from core.analysis.readmodel.pairs import (
    PAIR_STATISTICS,
    SUBSET_ACCURACY,
    TOST_MARGIN,
    PairStatistics,
    pair_states,
    paired_comparison,
    paired_t_columns,
    significance_stars,
)
from core.analysis.readmodel.protocol_tables import breakdown, instance_attributes
from core.analysis.readmodel.reference import (
    PRODUCTION_PROTOCOL,
    REFERENCE_ID_COLUMNS,
    REFERENCE_SUMMARY_COLUMNS,
    STATE_COUNT_COLUMNS,
    metric_states,
    metric_summary,
    reference_metric_names,
    reference_scores,
    reference_summary,
    state_count_columns,
)
from core.analysis.readmodel.repeats import (
    ITEM_KEYS,
    item_means,
    latest_run_rows,
    per_item,
    repeat_summary,
    repeat_text,
)
from core.analysis.readmodel.report import (
    RunReport,
    enterprise_repeats,
    model_counts,
    repeats_from_responses,
    report_document,
    run_repeats,
    run_report,
)
from core.analysis.readmodel.responses import (
    CONSTRAINT_COLUMNS,
    FAILURE_SUM_COLUMNS,
    IAS,
    RESPONSE_COLUMNS,
    RULE_JUDGE,
    constraint_verdicts,
    failure_count_rows,
    failure_counts,
    failure_mode_counts,
    ias,
    ias_from_counts,
    model_subset_summary,
    read_sql,
    response_details,
    response_domains,
    response_scores,
)
from core.analysis.readmodel.robustness import (
    PROTOCOL_EFFECT_METRICS,
    RobustnessViews,
    conflict_view,
    knowledge_gap_view,
    protocol_effect,
    robustness_states,
    robustness_views,
)
from core.analysis.readmodel.runs import (
    RunState,
    failed_first_start_runs,
    first_start_runs,
    generation_summary,
    run_judges,
    run_states,
    scored_runs,
    unscored_first_start_runs,
)
from core.analysis.readmodel.scope import (
    CATEGORY_LABELS,
    COST_METRICS,
    METRICS,
    MODEL_COLUMNS,
    MODES,
    NUMERIC_COLUMNS,
    QUALITY_METRICS,
    benchmark_composition,
    data_version,
    filter_scores,
    gold_version,
    in_model_order,
    latest_per_model_instance,
    load_failure_counts,
    load_scores,
    model_catalog,
    model_order,
    prepare_scores,
    scores_from_responses,
    verdict_counts,
    versions,
    with_model_info,
)
from core.analysis.readmodel.states import (
    STATE_COLUMNS,
    frame_state_text,
    metric_state_counts,
    metric_state_texts,
    response_statuses,
    state_columns,
    state_counts,
    state_text,
    state_totals,
    states_beside,
    with_metric_states,
)
from core.scoring.summaries import stale_summary_runs
from core.store.schema import CATEGORIES, NO_MODE

__all__ = [
    "breakdown", "instance_attributes",
    "metric_aggregates", "aggregate_means", "aggregate_state_counts",
    "RULE_JUDGE", "RESPONSE_COLUMNS", "CONSTRAINT_COLUMNS", "IAS", "ias_from_counts", "ias", "read_sql",
    "response_scores", "failure_count_rows", "failure_mode_counts", "FAILURE_SUM_COLUMNS", "constraint_verdicts", "model_subset_summary", "failure_counts",
    "response_details", "response_domains", "MODES", "CATEGORY_LABELS", "QUALITY_METRICS", "COST_METRICS",
    "METRICS", "NUMERIC_COLUMNS", "MODEL_COLUMNS", "model_catalog", "data_version", "gold_version", "versions",
    "benchmark_composition", "prepare_scores", "filter_scores", "with_model_info", "model_order", "in_model_order",
    "latest_per_model_instance", "load_scores", "load_failure_counts", "verdict_counts", "bootstrap_weights",
    "bootstrap_means", "bootstrap_counts", "_ci", "GAP_KEY", "GAP_LABEL", "LONG_COLUMNS", "mean_rows", "group_positions",
    "GAP_ASSUMPTION", "GAP_BOUND_COLUMNS", "GAP_METHOD", "gap_bounds", "GAP_MIN_STRICT", "leaderboard", "leaderboard_states", "leaderboard_parts", "leaderboard_table", "DOMAIN_METRICS", "domain_metrics", "domain_heatmap", "domain_metric_states",
    "failure_rates", "failure_view", "modeless_verdicts", "verdict_totals_text", "failing_verdicts", "knowledge_gap_view", "conflict_view", "robustness_states", "robustness_views", "RobustnessViews",
    "PROTOCOL_EFFECT_METRICS", "protocol_effect", "SUBSET_ACCURACY", "significance_stars", "paired_comparison", "pair_states",
    "PAIR_STATISTICS", "PairStatistics", "TOST_MARGIN", "paired_t_columns",
    "EQUIVALENCE_METRICS", "natural_vs_augmented", "evaluated_composition", "OriginItems", "origin_items",
    "select_items", "origin_equivalence", "items_composition", "GOLD_METRICS", "TARGET_CI_WIDTH",
    "LABELS_ONLY", "NO_JUDGE_NOTE",
    "CORRECTED_COLUMNS", "gold_values", "response_uncertainty", "corrected_estimates", "corrected_difference", "difference_pairs", "pairs_difference",
    "ranking_changes", "corrected_trust", "load_corrected", "scored_runs", "run_judges",
    "unscored_first_start_runs", "failed_first_start_runs", "first_start_runs", "RunState", "run_states", "generation_summary", "RunReport", "run_report",
    "model_counts", "report_document", "PRODUCTION_PROTOCOL", "REFERENCE_ID_COLUMNS", "REFERENCE_SUMMARY_COLUMNS",
    "reference_metric_names", "reference_scores", "reference_summary", "INSTRUCTION_METRICS", "instruction_scores",
    "instruction_summary", "pooled_share", "STATE_COUNT_COLUMNS", "metric_states", "metric_summary", "state_count_columns",
    "stale_summary_runs", "CATEGORIES", "NO_MODE",
    "STATE_COLUMNS", "state_columns", "state_counts", "state_totals", "state_text", "frame_state_text", "metric_state_texts",
    "metric_state_counts", "response_statuses", "with_metric_states", "states_beside", "count_states",
    "ITEM_KEYS", "item_means", "latest_run_rows", "per_item", "repeat_summary", "repeat_text", "run_repeats", "enterprise_repeats", "repeats_from_responses", "scores_from_responses",
]
