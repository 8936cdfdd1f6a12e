"""Shared sidebar filters, cached loaders and the first-start banner of the results pages.

Every cached function takes the data version (max verdict id, verdict count, max response id) as an argument,
so new verdicts invalidate the caches while filter changes reuse the loaded frames.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from core.analysis import readmodel
from core.analysis.ppi import MIN_LABELS
from core.analysis.readmodel.enterprise_aggregates import domain_aggregates, filter_aggregates, items_repeat
from core.analysis.readmodel.leaderboard_aggregates import board_aggregates, board_from_aggregates
from core.analysis.readmodel.robustness_aggregates import (
    conflict_from_aggregates,
    knowledge_gap_from_aggregates,
    protocol_effect_from_aggregates,
    robustness_aggregates,
    robustness_states_from_aggregates,
)
from core.analysis.readmodel.runs import scored_run_rows
from core.config import REPO_ROOT
from core.first_start import first_start_run
from core.generation.models_admin import active_runs, reap_when_done
from core.ingest.sets import benchmark_sets, scoped_response_ids
from core.protocols import PROTOCOLS
from core.protocols.views import holds_protocol as runs_hold_protocol
from core.protocols.views import newest_run_holding
from core.review.gold import small_sample_evidence
from core.scoring.judges.names import judge_label
from ui import charts
from ui.live import refresh_on_new_data
from ui.session import engine, filter_slot
from ui.tables import STATE_COUNT_COLUMNS, table_config

SUBSETS = {"all": [], "noisy": ["noisy"], "gap": ["gap"], "conflict": ["conflict"]}
FIRST_START_LABEL = "baselines + heuristic judge"


@dataclass(frozen=True)
class Scope:
    """Which instances count: one benchmark set (None: any) and, optionally, only those experts accepted."""

    set_id: int | None = None
    accepted_only: bool = False

    @property
    def narrowed(self) -> bool:
        return self.set_id is not None or self.accepted_only


@dataclass(frozen=True)
class Filters:
    """What the user chose in the sidebar."""

    run_ids: tuple[int, ...]
    judge: str
    subset: str
    domains: tuple[str, ...]
    version: tuple
    scope: Scope = Scope()
    gold: tuple = ()  # gold-label version: the judge-corrected estimates are cached per (data, gold) version

    @property
    def modes(self) -> list[str]:
        return SUBSETS[self.subset]


def _read_run_choices(run_ids: tuple[int, ...], with_domains: bool) -> tuple[list[str], list[str]]:
    """The runs' judges and, `with_domains`, their EnterpriseRAG domains, for the filters (without loading the scores)."""
    judges = readmodel.run_judges(engine(), list(run_ids))
    return judges, readmodel.response_domains(engine(), list(run_ids)) if with_domains else []


@st.cache_data(max_entries=8, show_spinner=False)
def _run_choices(run_ids: tuple[int, ...], with_domains: bool, version: tuple) -> tuple[list[str], list[str]]:
    """_read_run_choices of runs other than the one a page opens on (that one comes with _sidebar_data), cached."""
    return _read_run_choices(run_ids, with_domains)


@st.cache_data(max_entries=4, show_spinner="Loading scores…")
def _responses(run_ids: tuple[int, ...], judge: str, version: tuple) -> pd.DataFrame:
    """The runs' per-response frame under `judge`, read once per data version for the scores and the repeats."""
    return readmodel.response_scores(engine(), list(run_ids), judge)


def response_frame(run_ids: tuple[int, ...], judge: str, version: tuple) -> pd.DataFrame:
    """The runs' per-response frame under `judge` (readmodel response_scores), cached per data version."""
    return _responses(run_ids, judge, version)


@st.cache_data(max_entries=8, show_spinner="Loading scores…")
def scores(run_ids: tuple[int, ...], judge: str, version: tuple) -> pd.DataFrame:
    """Prepared per-response scores of the runs under `judge` (cached per data version)."""
    return readmodel.scores_from_responses(_responses(run_ids, judge, version))


@st.cache_data(max_entries=8, show_spinner=False)
def repeats_note(run_ids: tuple[int, ...], judge: str, version: tuple) -> str:
    """'k repeats per item, N items, F flaky' per model when the runs answered items several times; else empty."""
    return readmodel.repeat_text(readmodel.repeats_from_responses(_responses(run_ids, judge, version)))


@st.cache_data(max_entries=16, show_spinner=False)
def _in_scope(run_ids: tuple[int, ...], scope: Scope, version: tuple) -> frozenset[int]:
    return frozenset(scoped_response_ids(engine(), run_ids, scope.set_id, scope.accepted_only))


def scoped(frame: pd.DataFrame, run_ids: tuple[int, ...], scope: Scope, version: tuple) -> pd.DataFrame:
    """Rows of a per-response frame whose instance is in the scope (benchmark set, accepted only)."""
    if not scope.narrowed:
        return frame
    return frame[frame["response_id"].isin(_in_scope(run_ids, scope, version))]


def _chosen(run_ids, judge, modes, domains, version, scope: Scope = Scope()) -> pd.DataFrame:
    return readmodel.filter_scores(scoped(scores(run_ids, judge, version), run_ids, scope, version), modes, domains)


def filtered_scores(f: Filters) -> pd.DataFrame:
    """Scores narrowed to the chosen subset, domains, benchmark set and verification status."""
    return _chosen(f.run_ids, f.judge, f.modes, f.domains, f.version, f.scope)


@st.cache_data(max_entries=16, show_spinner="Computing confidence intervals…")
def leaderboard(run_ids: tuple[int, ...], judge: str, modes: tuple[str, ...], domains: tuple[str, ...], version: tuple,
                scope: Scope = Scope()) -> pd.DataFrame:
    """Leaderboard rows (mean, 95% CI, n) for one filter choice, with the judge's label on every row."""
    board = readmodel.leaderboard(_chosen(run_ids, judge, modes, domains, version, scope), models(version))
    return board.assign(judge=judge_label(judge))


@st.cache_data(max_entries=16, show_spinner=False)
def leaderboard_states(run_ids: tuple[int, ...], judge: str, modes: tuple[str, ...], domains: tuple[str, ...],
                       version: tuple, scope: Scope = Scope()) -> pd.DataFrame:
    """The state counts behind each leaderboard row for one filter choice (counted once per data version)."""
    return readmodel.leaderboard_states(_chosen(run_ids, judge, modes, domains, version, scope))


def _robustness_source(run_ids: tuple[int, ...], judge: str, modes: tuple[str, ...], domains: tuple[str, ...],
                       version: tuple, scope: Scope) -> tuple[pd.DataFrame | None, pd.DataFrame]:
    """(the Robustness views' aggregates in the chosen subset and domains, None) or, where the scope or repeated items
    need the responses (as domain_aggregates_for), (None, the chosen per-response scores)."""
    aggregates = None if scope.narrowed else _robustness_aggregates(run_ids, judge, version)
    if aggregates is None:
        return None, _chosen(run_ids, judge, modes, domains, version, scope)
    return filter_aggregates(aggregates, modes, domains), pd.DataFrame()


@st.cache_data(max_entries=16, show_spinner=False)
def robustness_gap(run_ids: tuple[int, ...], judge: str, modes: tuple[str, ...], domains: tuple[str, ...],
                   version: tuple, scope: Scope = Scope()) -> pd.DataFrame:
    """The knowledge-gap view (readmodel.knowledge_gap_view) for one filter choice, with the judge's label."""
    aggregates, chosen = _robustness_source(run_ids, judge, modes, domains, version, scope)
    if aggregates is None:
        gap = readmodel.knowledge_gap_view(chosen, models(version))
    else:
        gap = knowledge_gap_from_aggregates(aggregates, models(version))
    return gap.assign(judge=judge_label(judge))


@st.cache_data(max_entries=16, show_spinner=False)
def robustness_conflict(run_ids: tuple[int, ...], judge: str, modes: tuple[str, ...], domains: tuple[str, ...],
                        version: tuple, scope: Scope = Scope()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The conflict ranking (with the judge's label) and Spearman's rho per paradigm (readmodel.conflict_view) for
    one filter choice."""
    aggregates, chosen = _robustness_source(run_ids, judge, modes, domains, version, scope)
    if aggregates is None:
        per_model, correlations = readmodel.conflict_view(chosen, models(version))
    else:
        per_model, correlations = conflict_from_aggregates(aggregates, models(version))
    return per_model.assign(judge=judge_label(judge)), correlations


@st.cache_data(max_entries=16, show_spinner=False)
def robustness_effect(run_ids: tuple[int, ...], judge: str, modes: tuple[str, ...], domains: tuple[str, ...],
                      version: tuple, scope: Scope = Scope(), metric: str = "rejection") -> pd.DataFrame:
    """The knowledge-protocol effect on `metric` (readmodel.protocol_effect) for one filter choice, with the judge's
    label."""
    aggregates, chosen = _robustness_source(run_ids, judge, modes, domains, version, scope)
    if aggregates is None:
        effect = readmodel.protocol_effect(chosen, models(version), metric)
    else:
        effect = protocol_effect_from_aggregates(aggregates, models(version), metric)
    return effect.assign(judge=judge_label(judge))


@st.cache_data(max_entries=16, show_spinner=False)
def robustness_states(run_ids: tuple[int, ...], judge: str, modes: tuple[str, ...], domains: tuple[str, ...],
                      version: tuple, scope: Scope = Scope(), metrics: tuple[str, ...] = ()) -> pd.DataFrame:
    """The state counts behind the Robustness views' `metrics` (readmodel.robustness_states) for one filter choice."""
    aggregates, chosen = _robustness_source(run_ids, judge, modes, domains, version, scope)
    if aggregates is None:
        return readmodel.robustness_states(chosen, metrics)
    return robustness_states_from_aggregates(aggregates, metrics)


@st.cache_data(max_entries=4, show_spinner="Loading scores…")
def _origin_items(run_ids: tuple[int, ...], judge: str, version: tuple) -> readmodel.OriginItems | None:
    """The runs' items as arrays for the Data quality page (readmodel.origin_items), cached per data version; None
    when a model answered an item more than once."""
    return readmodel.origin_items(engine(), list(run_ids), judge)


def _chosen_items(run_ids, judge, modes, domains, version, scope: Scope) -> readmodel.OriginItems | None:
    """The items of one filter choice, or None where the page reads the per-item frame (repeated items)."""
    items = _origin_items(run_ids, judge, version)
    if items is None:
        return None
    return readmodel.select_items(items, modes, domains, _in_scope(run_ids, scope, version) if scope.narrowed else None)


@st.cache_data(max_entries=16, show_spinner=False)
def equivalence(run_ids: tuple[int, ...], judge: str, modes: tuple[str, ...], domains: tuple[str, ...], version: tuple,
                scope: Scope = Scope(), margin: float = 0.2) -> pd.DataFrame:
    """Natural vs augmented equivalence table for one filter choice and margin."""
    items = _chosen_items(run_ids, judge, modes, domains, version, scope)
    if items is None:
        frame = readmodel.natural_vs_augmented(_chosen(run_ids, judge, modes, domains, version, scope), margin=margin)
    else:
        frame = readmodel.origin_equivalence(items, margin=margin)
    return frame.assign(judge=judge_label(judge))


@st.cache_data(max_entries=16, show_spinner=False)
def evaluated_composition(run_ids: tuple[int, ...], judge: str, modes: tuple[str, ...], domains: tuple[str, ...],
                          version: tuple, scope: Scope = Scope()) -> pd.DataFrame:
    """Distinct evaluated instances by domain, mode and origin for one filter choice."""
    items = _chosen_items(run_ids, judge, modes, domains, version, scope)
    if items is None:
        return readmodel.evaluated_composition(_chosen(run_ids, judge, modes, domains, version, scope))
    return readmodel.items_composition(items)


@st.cache_data(max_entries=8, show_spinner="Loading scores…")
def _domain_aggregates(run_ids: tuple[int, ...], judge: str, version: tuple) -> pd.DataFrame | None:
    """The runs' aggregates the Domains page reads (readmodel domain_aggregates: its metrics in every mode), or None
    when a model answered an item more than once in them (items_repeat)."""
    if _items_repeat(run_ids, version):
        return None
    return domain_aggregates(engine(), list(run_ids), judge)


@st.cache_data(max_entries=8, show_spinner="Loading scores…")
def _robustness_aggregates(run_ids: tuple[int, ...], judge: str, version: tuple) -> pd.DataFrame | None:
    """The runs' aggregates of the Robustness views (readmodel robustness_aggregates), or None when a model answered
    an item more than once in them (items_repeat)."""
    if items_repeat(engine(), list(run_ids)):
        return None
    return robustness_aggregates(engine(), list(run_ids), judge)


def domain_aggregates_for(f: Filters) -> pd.DataFrame | None:
    """The Domains page's aggregates (readmodel.domain_aggregates) in the chosen subset and domains, read once per
    data version (a subset change reads nothing); None with a benchmark set or 'accepted only' (the aggregates are per
    run), or when a model answered an item more than once (the per-response frame keeps one value per item): the page
    then reads the responses (filtered_scores)."""
    if f.scope.narrowed:
        return None
    aggregates = _domain_aggregates(f.run_ids, f.judge, f.version)
    return None if aggregates is None else filter_aggregates(aggregates, f.modes, f.domains)


@st.cache_data(max_entries=8, show_spinner=False)
def _items_repeat(run_ids: tuple[int, ...], version: tuple) -> bool:
    """Whether a model answered an item more than once in the runs (readmodel items_repeat), once per data version."""
    return items_repeat(engine(), list(run_ids))


@st.cache_data(max_entries=16, show_spinner="Computing confidence intervals…")
def _aggregate_board(run_ids: tuple[int, ...], judge: str, modes: tuple[str, ...], domains: tuple[str, ...],
                     version: tuple) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame] | None:
    """The board from only the aggregates it reads, summed per model by the database (board_aggregates)."""
    if _items_repeat(run_ids, version):
        return None
    chosen = board_aggregates(engine(), list(run_ids), judge, modes, domains, _summaries_stale(run_ids, judge))
    board, states, bounds = board_from_aggregates(chosen, models(version))
    return board.assign(judge=judge_label(judge)), states, bounds


def aggregate_board(f: Filters) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame] | None:
    """The leaderboard rows, their state counts and the gap's bounds from the aggregates for one filter choice
    (cached per data version), or None where the page reads the responses (domain_aggregates_for)."""
    if f.scope.narrowed:
        return None
    return _aggregate_board(f.run_ids, f.judge, tuple(f.modes), f.domains, f.version)


def cache_args(f: Filters) -> tuple:
    """Hashable arguments identifying a filter choice, for cached aggregations."""
    return (f.run_ids, f.judge, tuple(f.modes), f.domains, f.version, f.scope)


@st.cache_data(max_entries=4, show_spinner=False)
def model_colors(version: tuple) -> dict[str, str]:
    """One colour per model of the catalogue, the same on every page and chart."""
    return charts.model_colors(models(version)["model"])


@st.cache_data(max_entries=4, show_spinner=False)
def models(version: tuple) -> pd.DataFrame:
    """The model catalogue (paradigm, access, baseline flag, prices)."""
    return readmodel.model_catalog(engine())


def _summaries_stale(run_ids: tuple[int, ...], judge: str) -> bool:
    """Whether some run's stored summaries for `judge` were not built from its current verdicts (one small read on
    every call: a re-score, a rebuild or a migration that marks summaries stale shows on the next render)."""
    return bool(readmodel.stale_summary_runs(engine(), list(run_ids), judge))


@st.cache_data(max_entries=8, show_spinner="Counting constraint failures…")
def _scoped_failure_counts(run_ids: tuple[int, ...], judge: str, scope: Scope, version: tuple) -> pd.DataFrame:
    """Figure-4 counts (verdict_counts layout) of the responses in scope, from their verdicts (the stored counts are per
    run)."""
    return readmodel.verdict_counts(scoped(readmodel.constraint_verdicts(engine(), list(run_ids), judge), run_ids, scope,
                                           version))


@st.cache_data(max_entries=32, show_spinner=False)
def _stored_failure_modes(run_ids: tuple[int, ...], judge: str, domains: tuple[str, ...], category: str | None,
                          version: tuple) -> pd.DataFrame:
    """_failure_modes from current stored summaries: a small read (no spinner: it would cost more than it shows)."""
    return readmodel.failure_mode_counts(engine(), list(run_ids), judge, domains, category, stale=False)


@st.cache_data(max_entries=8, show_spinner="Counting constraint failures…")
def _scanned_failure_modes(run_ids: tuple[int, ...], judge: str, domains: tuple[str, ...], category: str | None,
                           version: tuple) -> pd.DataFrame:
    """_failure_modes counted from the verdicts, some run's summaries being stale: a scan, with a spinner."""
    return readmodel.failure_mode_counts(engine(), list(run_ids), judge, domains, category, stale=True)


def _failure_modes(run_ids: tuple[int, ...], judge: str, domains: tuple[str, ...], category: str | None,
                   version: tuple) -> pd.DataFrame:
    """Figure 4's counts per model, mode and category (or sub-dimension of `category`) in `domains`, summed in the
    database (readmodel.failure_mode_counts), cached per data version: a subset change and the modeless count reuse
    them without a query; whether the summaries are current is read on every call."""
    read = _scanned_failure_modes if _summaries_stale(run_ids, judge) else _stored_failure_modes
    return read(run_ids, judge, domains, category, version)


def failure_counts(f: Filters) -> pd.DataFrame:
    """The Figure-4 counts the page starts from, one cached read per page run: over every domain per model, mode and
    category (failure_mode_counts); with a benchmark set or 'accepted only', counted from the verdicts in scope."""
    if f.scope.narrowed:
        return _scoped_failure_counts(f.run_ids, f.judge, f.scope, f.version)
    return _failure_modes(f.run_ids, f.judge, (), None, f.version)


def modeless_failures(counts: pd.DataFrame) -> int:
    """Constraint verdicts in failure_counts' `counts` of instances without a mode, outside Figure 4's modes."""
    return readmodel.modeless_verdicts(counts)


def failure_view(f: Filters, counts: pd.DataFrame, category: str | None = None) -> pd.DataFrame:
    """Figure 4's counts for the filters: per model, mode and category, or with `category` per sub-dimension of it,
    of the chosen modes (failure_rates sums them over the modes), from failure_counts' `counts` over every domain, else
    summed in the database per domain and category choice (cached per data version); with a benchmark set or
    'accepted only' from the verdict counts in scope."""
    modes = tuple(f.modes or readmodel.MODES)
    if f.scope.narrowed:
        return readmodel.failure_view(counts, modes, f.domains, category)
    if f.domains or category is not None:
        counts = _failure_modes(f.run_ids, f.judge, f.domains, category, f.version)
    return readmodel.failure_view(counts, modes)


@st.cache_data(max_entries=32, show_spinner=False)
def failing_verdicts(run_ids: tuple[int, ...], judge: str, model: str | None, category: str | None,
                     sub_dimension: str | None, version: tuple) -> pd.DataFrame:
    """The failed constraint verdicts of one model (and category, sub-dimension) in the runs (cached per data version:
    a subset or domain change filters them without a query)."""
    return readmodel.constraint_verdicts(engine(), list(run_ids), judge, model=model, category=category,
                                         sub_dimension=sub_dimension, failed_only=True)


def data_version() -> tuple:
    """Current data version: (max verdict id, verdict count, max response id, database URL)."""
    return (*readmodel.data_version(engine()), engine().url.render_as_string(hide_password=True))


def gold_version() -> tuple:
    """Current gold-label version (max annotation id, annotation count, max assignment id): keys the corrected
    estimates, so a saved label shows on the next run of a page without re-reading the scores."""
    return readmodel.gold_version(engine())


def versions() -> tuple:
    """What the results pages watch for a refresh: the data version and the gold-label version (one statement)."""
    data, gold = readmodel.versions(engine())
    return (*data, engine().url.render_as_string(hide_password=True)), gold


def _run_label(run_id: int, name: str | None, status: str, config: dict | None) -> str:
    tag = f" — {FIRST_START_LABEL}" if (config or {}).get("first_start") else ""
    return f"#{run_id} {name or 'run'} ({status}){tag}"


@st.cache_resource(show_spinner=False)
def _first_start_job(url: str) -> subprocess.Popen | None:
    """Launch `python -m core.first_start` once per server process (set GAUNTLET_FIRST_START=0 to disable)."""
    if os.environ.get("GAUNTLET_FIRST_START", "1") == "0":
        return None
    job = subprocess.Popen([sys.executable, "-m", "core.first_start"], cwd=REPO_ROOT, env={**os.environ, "GAUNTLET_DATABASE_URL": url},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    reap_when_done(job)
    return job


def first_start_banner(only_first_start: bool, states: list[readmodel.RunState] | None = None) -> None:
    """Explain sample-only numbers and how to evaluate real models (`only_first_start`: every scored run is a first-start
    one); show the first-start job's progress (from the runs' `states` when the page has read them)."""
    running, failed = readmodel.first_start_runs(engine(), states)
    if running:
        st.info(f"First start: the bundled sample is being run through {FIRST_START_LABEL} — {running[0].message or 'starting'}.", icon=":material/hourglass_top:")
    for run_id, why in failed:
        st.error(f"First start failed: run #{run_id} could not be generated or scored ({why}). Its numbers are "
                 "incomplete; retry with `python -m core.first_start`.", icon=":material/error:")
    if only_first_start:
        st.info(
            f"These numbers come from the bundled sample scored by **{FIRST_START_LABEL}** (no API key needed). To evaluate real "
            "models, set `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` (or `OPENAI_BASE_URL` for an OpenAI-compatible endpoint), "
            "then register the model and launch a run on the Run evaluation page (or with `gauntlet run`).",
            icon=":material/info:",
        )


@dataclass(frozen=True)
class SidebarData:
    """What the results sidebar shows before the user chooses: the scored runs' labels (newest first), the run a page
    opens on (opened_on: its id and whether it holds the page's protocol; None: no scored run), whether every scored
    run is a first-start one, that run's judges and domains (choices) and the benchmark sets (id -> label)."""

    labels: dict[int, str]
    opened_on: tuple[int, bool] | None
    only_first_start: bool = False
    choices: tuple[list[str], list[str]] = field(default_factory=lambda: ([], []))
    sets: dict[int, str] = field(default_factory=dict)


def _opened_on(protocol: str | None, scored: tuple[int, ...]) -> tuple[int, bool]:
    """The newest scored run holding `protocol` (True), else the newest scored run (False; True without a protocol)."""
    held = None if protocol is None else newest_run_holding(engine(), protocol, scored)
    return (held, True) if held is not None else (max(scored), protocol is None)


@st.cache_data(ttl=5, show_spinner=False)
def _sidebar_data(protocol: str | None, with_domains: bool, with_sets: bool, version: tuple) -> SidebarData:
    """Everything the sidebar reads before the user chooses (SidebarData), in one cached read per data version: one
    cache entry to hash and copy per render, plain values (no frame to pickle); the run labels carry the run status,
    which changes without the data version, hence the 5-second life."""
    runs = scored_run_rows(engine())
    if not runs:
        return SidebarData({}, None)
    labels = {run_id: _run_label(run_id, name, status, config) for run_id, name, status, config in runs}
    opened_on = _opened_on(protocol, tuple(labels))
    first = sum(bool((config or {}).get("first_start")) for *_, config in runs)
    return SidebarData(labels, opened_on, first == len(labels), _read_run_choices((opened_on[0],), with_domains),
                       _read_sets() if with_sets else {})


def _forget_foreign_runs(protocol: str | None, run_ids: tuple[int, ...], version: tuple) -> None:
    """Drop the runs remembered from another results page when none of them holds this page's protocol (a shared
    link's ?runs= is kept as it is)."""
    memory = st.session_state.get("results_memory", {})
    remembered = memory.get("results_runs_w")
    if protocol is None or not remembered or "results_runs_w" in st.session_state or st.query_params.get("runs"):
        return
    if newest_run_holding(engine(), protocol, [r for r in remembered if r in run_ids]) is None:
        memory.pop("results_runs_w", None)


def sidebar_filters(*, subset: bool = True, domains: bool = True, fixed_subset: str | None = None,
                    sets: bool = False, protocol: str | None = None, ias: bool = True) -> Filters | None:
    """Runs, judge, subset and domains (and with `sets`, the benchmark set and 'accepted only') in the sidebar, kept in
    the URL so a link reopens the same view; None (with a message) when nothing is scored yet. The runs default to the
    newest one holding `protocol`; `ias`: the page shows Strict IAS (the heuristic judge's banner about it applies)."""
    version, gold = versions()
    states = readmodel.run_states(engine())  # read live, once: the runs being worked on and the first-start banner
    refresh_on_new_data((version, gold), versions, active_runs(engine(), states))
    data = _sidebar_data(protocol, domains, sets, version)
    first_start_banner(data.only_first_start, states)
    if data.opened_on is None:
        if first_start_run(engine()) is None:
            _first_start_job(engine().url.render_as_string(hide_password=False))
        st.warning(f"No scored run yet. On first start the sample is scored by {FIRST_START_LABEL} in the background, "
                   "or launch a run on the Run evaluation page; this page shows the scores as soon as they arrive.")
        return None
    labels = data.labels
    with filter_slot():
        st.subheader("Results filters")
        scored = tuple(labels)
        newest, holds = data.opened_on
        default = [newest]
        _forget_foreign_runs(protocol, scored, version)
        url_seed("results_runs_w", "runs", list(labels), multi=True, cast=int, default=default)
        chosen = st.multiselect("Runs", list(labels), format_func=labels.get, key="results_runs_w")
        url_keep("results_runs_w", "runs", multi=True)
        run_ids = tuple(sorted(chosen or default))
        judges, names = data.choices if run_ids == (newest,) else _run_choices(run_ids, domains, version)
        url_seed("results_judge", "judge", judges)
        judge = st.selectbox("Judge", judges, key="results_judge", format_func=judge_label,
                             help="Rule checks are always included; this picks who judged the rest.")
        url_keep("results_judge", "judge")
        chosen_subset = fixed_subset or "all"
        if subset and not fixed_subset:
            url_seed("results_subset", "subset", list(SUBSETS))
            chosen_subset = st.selectbox("Subset", list(SUBSETS), key="results_subset")
            url_keep("results_subset", "subset")
        chosen_domains: list[str] = []
        if domains:
            url_seed("results_domains", "domains", names, multi=True)
            chosen_domains = st.multiselect("Domains (empty = all)", names, key="results_domains")
            url_keep("results_domains", "domains", multi=True)
        scope = scope_filters(data.sets) if sets else Scope()
        share_link()
    filters = Filters(run_ids, judge, chosen_subset, tuple(sorted(chosen_domains)), version, scope, gold)
    st.caption(f"Judge: **{judge_label(judge)}** (rule checks included) · runs {', '.join(f'#{r}' for r in run_ids)} · "
               f"subset {chosen_subset} · domains {', '.join(filters.domains) or 'all'}{_scope_text(scope, data.sets)}. Every "
               "number shows its n; † marks n < 30 (small sample); undetermined and not-applicable items are counted, "
               "never scored 0.")
    if protocol is not None and not holds:
        st.info(f"No scored run holds {PROTOCOLS.get(protocol).title} responses yet: this page opened on the newest "
                "run.", icon=":material/info:")
    if judge == "heuristic" and ias:
        st.warning("These numbers come from the **heuristic (lexical, offline)** judge: word overlap, number and negation "
                   "checks, refusal cues. It cannot judge most behavioural instructions, so Strict IAS is mostly "
                   "undetermined; see Judge alignment for its agreement with experts.", icon=":material/warning:")
    return filters


@st.cache_data(max_entries=8, show_spinner="Correcting with the gold labels…")
def corrected(run_ids: tuple[int, ...], judge: str, version: tuple, gold: tuple) -> pd.DataFrame:
    """Judge-corrected (PPI++) estimates of the gold-decidable metrics, with the judge's label on every row (cached
    per data version and gold-label version: new labels recompute them)."""
    return readmodel.load_corrected(engine(), list(run_ids), judge, scores(run_ids, judge, version)).assign(
        judge=judge_label(judge))


def corrected_for(f: Filters) -> pd.DataFrame:
    """corrected() for the filters; empty while no annotation exists (the gold version counts them): no gold label,
    nothing to correct with, so the PPI computation is skipped."""
    if f.gold and not f.gold[1]:
        return pd.DataFrame()
    return corrected(f.run_ids, f.judge, f.version, f.gold)


def corrected_section(f: Filters) -> None:
    """The leaderboard's judge-corrected estimates beside the raw judge numbers, or what to do to get them."""
    table = corrected_for(f)
    st.subheader("Judge-corrected estimates (expert gold labels)")
    if f.scope.narrowed:
        st.caption("These use every instance of the chosen runs: the benchmark-set and 'accepted only' filters do not "
                   "apply to this section.")
    if table.empty or not table["n"].fillna(0).any():
        st.info("No gold labels on these runs yet: draw a gold sample (Adjudicate page) and label it to see "
                "judge-corrected estimates with valid confidence intervals.", icon=":material/info:")
        return
    if table["estimate"].isna().all():
        st.info(f"{int(table['n'].sum())} gold label values so far: a corrected estimate needs at least {MIN_LABELS} "
                "gold labels per model and metric (fewer give intervals too wide to say anything); label more on the "
                "Label responses page.", icon=":material/info:")
    undecided = sorted(set(table.loc[table["method"] == readmodel.LABELS_ONLY, "label"]))
    if undecided:
        st.info(f"Judge {judge_label(f.judge)} decided no response of {', '.join(undecided)}: those estimates come "
                "from the gold labels alone (plain interval, no judge credit, no effective n).", icon=":material/info:")
    changed = readmodel.ranking_changes(table)
    if changed:
        st.warning(f"The correction changes the ranking on: {', '.join(changed)}. "
                   + readmodel.corrected_trust(table), icon=":material/swap_vert:")
    st.caption(f"Judge {judge_label(f.judge)}: its raw mean over N responses, and the prediction-powered (PPI++) "
               "estimate that uses the n expert gold labels to remove the judge's bias; effective n is how many gold "
               "labels alone would give the same precision; 'labels for ±5 pts' is how many gold labels this judge "
               "needs for a 95% CI of ±5 points. † n < 30. No corrected value below {MIN_LABELS} gold labels.")
    shown = table.assign(**{
        "raw judge": table["judge_value"].map(lambda v: "no data" if pd.isna(v) else f"{v:.1%}"),
        "corrected [95% CI]": [("—" if pd.isna(e) else f"{e:.1%} [{lo:.1%}, {hi:.1%}]") + ("†" if s else "")
                               for e, lo, hi, s in zip(table["estimate"], table["ci_low"], table["ci_high"],
                                                       table["small_n"].eq(True), strict=True)],
        "gold only [95% CI]": ["—" if pd.isna(g) else f"{g:.1%} [{lo:.1%}, {hi:.1%}]"
                               for g, lo, hi in zip(table["gold_mean"], table["gold_ci_low"], table["gold_ci_high"],
                                                    strict=True)],
        "effective n": table["effective_n"].map(lambda v: "—" if pd.isna(v) else f"{v:.0f}"),
    })
    shown = shown.rename(columns={"labels_for_target": "labels for ±5 pts"})
    if (table["small_n"].eq(True) & table["estimate"].notna()).any():
        st.caption(small_sample_evidence())
    st.dataframe(shown[["model", "label", "raw judge", "corrected [95% CI]", "gold only [95% CI]", "N", "n",
                        "effective n", "labels for ±5 pts", "method", "note", *STATE_COUNT_COLUMNS]], hide_index=True,
                 width="stretch", column_config={"model": st.column_config.TextColumn("model", pinned=True),
                                                 "label": st.column_config.TextColumn("metric")} | table_config(
                     STATE_COUNT_COLUMNS, None))
    st.caption("scored, not applicable, unparseable, judge errors, unjudged, skipped: the state of the judge's value on each "
               "of the N responses behind its raw mean.")


# --------------------------------------------------------------------------- filters in the URL


def _decode(raw: str, cast) -> list:
    out = []
    for part in raw.split(","):
        try:
            out.append(cast(part))
        except ValueError:
            continue
    return out


def url_seed(key: str, param: str, options: list, *, multi: bool = False, cast=str, default=None) -> None:
    """Before a widget is drawn: its value from a shared link (?param=a,b), else the choice made on another results
    page, else `default`; values that are not among `options` are dropped."""
    if key in st.session_state:
        return
    memory = st.session_state.setdefault("results_memory", {})
    raw = st.query_params.get(param)
    wanted = _decode(raw, cast) if raw is not None else memory.get(key, default)
    if wanted is None:
        return
    values = [v for v in (wanted if isinstance(wanted, list) else [wanted]) if v in options]
    if multi:
        st.session_state[key] = values
    elif values:
        st.session_state[key] = values[0]


def url_keep(key: str, param: str, *, multi: bool = False) -> None:
    """After a widget: put its value in the URL (so the address is a link to this view) and remember it for the
    other results pages."""
    value = st.session_state.get(key)
    st.session_state.setdefault("results_memory", {})[key] = value
    text = ",".join(str(v) for v in value) if multi else ("" if value is None else str(value))
    if text:
        st.query_params[param] = text
    else:
        st.query_params.pop(param, None)


def share_link() -> None:
    """The link to the current view (the filters are in it)."""
    url = getattr(st.context, "url", None)
    if url:
        query = "&".join(f"{k}={v}" for k, v in st.query_params.to_dict().items())
        with st.expander("Share this view", icon=":material/link:"):
            st.code(f"{url.split('?')[0]}{'?' + query if query else ''}", language=None, wrap_lines=True)
            st.caption("The filters are in the address: anyone signed in with access opens the same view.")


def _read_sets() -> dict[int, str]:
    """The benchmark sets, id -> label."""
    return {s.id: s.label for s in benchmark_sets(engine())}


def scope_filters(sets: dict[int, str]) -> Scope:
    """Benchmark set (one of `sets`, id -> label) and 'accepted instances only' (sidebar, kept in the URL)."""
    options = [None, *sets]
    url_seed("results_set", "set", options, cast=int)
    chosen = st.selectbox("Benchmark set", options, key="results_set", format_func=lambda i: "all sets" if i is None else sets[i],
                          help="Every import or build is a named set; choose one to compare models on it only.")
    url_keep("results_set", "set")
    url_seed("results_accepted", "accepted", [True, False], cast=lambda v: v == "1")
    accepted = st.toggle("Accepted instances only", key="results_accepted",
                         help="Only instances the experts accepted in verification.")
    if accepted:
        st.query_params["accepted"] = "1"
    else:
        st.query_params.pop("accepted", None)
    st.session_state.setdefault("results_memory", {})["results_accepted"] = accepted
    return Scope(chosen, bool(accepted))


def _scope_text(scope: Scope, sets: dict[int, str]) -> str:
    if not scope.narrowed:
        return ""
    parts = [f"set {sets.get(scope.set_id, scope.set_id)}"] if scope.set_id is not None else []
    return " · " + " · ".join(parts + (["accepted instances only"] if scope.accepted_only else []))


@st.cache_data(max_entries=16, show_spinner=False)
def holds_protocol(protocol: str, run_ids: tuple[int, ...], version: tuple) -> bool:
    """Whether any of the runs holds done responses of `protocol` (cached per data version): a protocol page whose
    runs hold none shows its 'no responses' notice without loading (its loaders would return no rows)."""
    return runs_hold_protocol(engine(), protocol, run_ids)
