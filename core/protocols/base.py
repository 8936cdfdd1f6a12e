"""What a protocol declares: the instance fields it requires, its conditions, prompts, metrics (per response, derived,
and which of them are headline), views and paper tables."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from core.protocols.messages import ChatMessage
from core.protocols.paper import PaperTableSpec
from core.protocols.prompting import InstanceView, bundle_meta, check_condition_settings, condition_bundle
from core.store.schema import InstanceSpec

Requirement = Callable[[InstanceSpec], str | None]  # returns an error message, or None when satisfied
Prompt = tuple[list[ChatMessage], dict[str, Any]]  # (messages, prompt_meta)


@dataclass(frozen=True)
class Condition:
    """A named transformation of an instance into a prompt (document subset, order, noise, policy, format); the
    settings are those of core.protocols.prompting.CONDITION_SETTINGS, checked when the condition is made."""

    name: str
    description: str
    settings: dict[str, Any] = field(default_factory=dict)
    question_types: tuple[str, ...] = ()  # applies only to instances of these attributes.question_type (empty: all)

    def __post_init__(self) -> None:
        check_condition_settings(self.settings)

    def applies(self, attributes: Mapping[str, Any] | None) -> bool:
        """Whether this condition applies to an instance with these attributes (its question type is listed)."""
        return not self.question_types or (attributes or {}).get("question_type") in self.question_types


@dataclass(frozen=True)
class ProtocolPage:
    """The app page a protocol's results show on: its script, title and icon, and its audience (a key of
    core.permissions.AUDIENCES: who may open it). Navigation and the permission table are derived from it."""

    path: str
    title: str
    icon: str
    audience: str = "results"


@dataclass(frozen=True)
class ViewResult:
    """What a view shows: a table (a pandas DataFrame, counts beside means), an optional figure (plotly) and the
    caption under them."""

    table: Any
    caption: str
    figure: Any = None


@dataclass(frozen=True)
class View:
    """A declarative view of a protocol's results that the generic page (pages/protocol_views.py) renders, since
    core never imports streamlit: its title and the function of (engine, run ids, judge) that builds it, or its
    'module:function' name, imported only when the view is built (so a declaration never imports the analysis
    layer)."""

    title: str
    build: Callable[[Any, Sequence[int], str], ViewResult] | str

    def builder(self) -> Callable[[Any, Sequence[int], str], ViewResult]:
        """The function that builds the view (its 'module:function' name imported now)."""
        if callable(self.build):
            return self.build
        module, _, name = self.build.partition(":")
        return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class BuildResult:
    """A built, importable benchmark file: its path, instance count, summary lines and the skipped items (each with
    why)."""

    out: Path
    instances: int
    summary: list[str]
    skipped: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Builder:
    """How a protocol's benchmark is built from a source, read by the Build benchmark page (its tab) and the services
    layer (the authorised build): the tab's label and caption, what the source is (a file, or a folder), its default
    under the shared datasets folder, the source layouts it takes, whether a BM25-only switch applies, and the build
    function's 'module:function' name: build(source, out_dir, *, fmt, seed, limit, bm25_only, progress) -> BuildResult,
    writing out_dir/instances.jsonl and calling progress(done, total) per item. A builder that can use an LLM where
    its rules run out names its estimate too: estimate(source, *, fmt, limit, generator, judge) -> BuildEstimate (the
    upper-bound cost shown for confirmation before the build); its build then also takes `assist` (the models)."""

    tab: str
    caption: str
    source_label: str
    default_source: str
    build: str
    folder: bool = False
    formats: tuple[str, ...] = ()
    bm25: bool = True
    estimate: str = ""

    def function(self) -> Callable[..., BuildResult]:
        """The build function (its 'module:function' name imported now)."""
        module, _, name = self.build.partition(":")
        return getattr(importlib.import_module(module), name)

    def estimator(self) -> Callable[..., Any]:
        """The LLM-cost estimate function (its 'module:function' name imported now); KeyError when it has none."""
        if not self.estimate:
            raise KeyError(f"the {self.tab!r} builder uses no LLM")
        module, _, name = self.estimate.partition(":")
        return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class BuildPanel:
    """A protocol's own Build benchmark tab, when its build takes more than a builder's generic form (uploads,
    libraries, a corpus report): the tab's label and the 'module:function' name of its renderer in ui/ (called with
    the signed-in principal), imported only when the tab is drawn, since core never imports streamlit."""

    tab: str
    render: str

    def renderer(self) -> Callable[[Any], None]:
        """The tab's renderer (its 'module:function' name imported now)."""
        module, _, name = self.render.partition(":")
        return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class CompositionTable:
    """One table of a protocol's composition (Browse benchmark, `gauntlet stats`): its title, its rows (column name
    to value, in column order) and the column that names a row."""

    title: str
    key: str
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class MetricModes:
    """The instance modes a protocol computes one response metric in (EnterpriseRAG's rejection: gap only); outside
    them the metric is not applicable for the reason `outside` names, or, with none, not scored at all (skipped)."""

    metric: str
    modes: tuple[str, ...]
    outside: str = ""


Renderer = Callable[[InstanceView, Sequence[Any], Condition], Prompt]  # documents final -> (messages, extra meta)


@dataclass(frozen=True)
class Protocol:
    """An evaluation protocol plug-in."""

    name: str
    title: str
    required: dict[str, Requirement]
    conditions: tuple[Condition, ...]
    metrics: tuple[str, ...]
    aggregates: tuple[str, ...] = ()  # declared metrics derived from the per-response ones (loose_ias, strict_ias, ...)
    headline: tuple[str, ...] = ()  # the metrics (of metrics + aggregates) a decision weighs first; the rest diagnose
    # how a response is scored: "metrics", each declared metric's computation; "constraints", the instance's constraints
    # one by one, its claims and its mode metrics by the judge (EnterpriseRAG), read by the scorer and the read model
    response_scoring: Literal["metrics", "constraints"] = "metrics"
    builder: Builder | None = None  # its benchmark builder: a Build benchmark tab and an authorised build
    build_panel: BuildPanel | None = None  # its own Build benchmark tab (richer than the builder's generic form)
    # 'module:function' (engine) -> tuple[CompositionTable, ...]: its composition over the latest instance versions
    # (Browse benchmark, `gauntlet stats`); empty: its facets (core.ingest.composition)
    composition: str = ""
    description: str = ""
    render: Renderer | None = None
    page: ProtocolPage | None = None  # the page its results open on (results_pages, the docs index)
    pages: tuple[ProtocolPage, ...] = ()  # its further results pages (EnterpriseRAG's figure pages), in menu order
    metric_modes: tuple[MetricModes, ...] = ()  # with response_scoring="constraints": the modes each metric is for
    checkers: tuple[str, ...] = ()  # modules whose import registers its rule checkers (core.scoring.checkers loads them)
    doc: str = ""  # the protocol's own documentation page (docs/<id>.md), listed in the docs index
    page_views: tuple[View, ...] = ()  # shown on the generic Protocol views page
    paper_tables: tuple[PaperTableSpec, ...] = ()  # the seed paper's tables `gauntlet reproduce` rebuilds
    # 'module:function' (engine, run_ids, judge) -> one row per done response with the values of its decision metrics,
    # derived ones included, and their `<metric>_status`; read by the decision across protocols. Empty: its
    # reference_scores, with the instruction IAS for those of its aggregates (core.analysis.readmodel.decision_scores)
    decision_scores: str = ""

    def __post_init__(self) -> None:
        names = [c.name for c in self.conditions]
        if "" not in names or len(set(names)) != len(names):
            raise ValueError(f"protocol {self.name!r} needs one default condition '' and unique condition names")

    def declared_pages(self) -> tuple[ProtocolPage, ...]:
        """Every page this protocol declares: its results page, then its further pages."""
        return (self.page, *self.pages) if self.page is not None else self.pages

    def decision_metric_ids(self) -> tuple[str, ...]:
        """Every metric this protocol reports: its per-response metrics, then its derived ones."""
        return tuple(dict.fromkeys((*self.metrics, *self.aggregates)))

    def condition_names(self) -> tuple[str, ...]:
        """The names of the conditions this protocol declares ('' is its default)."""
        return tuple(c.name for c in self.conditions)

    def applies(self, attributes: Mapping[str, Any] | None, condition: str) -> bool:
        """Whether `condition` (a name this protocol declares) applies to an instance with these attributes."""
        return self.condition(condition).applies(attributes)

    def bundle(self, documents: Sequence[Any], condition: str | Condition, order: str = "stored",
               seed: int = 0) -> tuple[list[Any], dict[str, Any]]:
        """The documents `condition` keeps, transformed and in prompt order, with the prompt_meta saying so."""
        chosen = self._resolve(condition)
        documents, meta = condition_bundle(documents, chosen.settings, order, seed)
        return documents, ({**meta, "condition": chosen.name} if chosen.name else meta)

    def render_prompt(self, instance: InstanceView, documents: Sequence[Any], condition: str | Condition,
                      meta: dict[str, Any]) -> Prompt:
        """(messages, prompt_meta) for a bundle already transformed by `bundle` (or cut to fit a context window)."""
        if self.render is None:
            raise ValueError(f"protocol {self.name!r} builds no prompts")
        messages, extra = self.render(instance, documents, self._resolve(condition))
        return messages, {**meta, **bundle_meta(documents), **extra}

    def prompt(self, instance: InstanceView, documents: Sequence[Any], condition: str | Condition = "",
               order: str = "stored", seed: int = 0) -> Prompt:
        """(messages, prompt_meta) of `instance` with its `documents` under `condition`, the run's order and seed."""
        chosen = self._resolve(condition)
        bundle, meta = self.bundle(documents, chosen, order, seed)
        return self.render_prompt(instance, bundle, chosen, meta)

    def _resolve(self, condition: str | Condition) -> Condition:
        return condition if isinstance(condition, Condition) else self.condition(condition)

    def condition(self, name: str) -> Condition:
        """The condition called `name`; an unknown name lists the known ones."""
        for c in self.conditions:
            if c.name == name:
                return c
        known = ", ".join(c.name or "(default)" for c in self.conditions)
        raise KeyError(f"unknown condition {name!r} of protocol {self.name!r}; known: {known}")

    def errors(self, spec: InstanceSpec) -> list[tuple[str, str]]:
        """(field, message) for every requirement `spec` does not meet."""
        return [(path, msg) for path, check in self.required.items() if (msg := check(spec))]


def needs(attribute: str, message: str) -> Requirement:
    """A requirement that `attribute` of the instance is present and non-empty."""
    return lambda spec: None if getattr(spec, attribute) else message
