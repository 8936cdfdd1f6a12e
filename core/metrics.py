"""Metric declarations: every metric the product reports is declared once, with what its numbers mean.

A declaration holds the id, label, unit and display scale, range, direction, kind, the judges that can produce it,
and the states a score can take. The kind picks the interval family (core.analysis.stats.interval): a rate (share of
0/1 outcomes) gets the exact Clopper-Pearson interval, a bounded score (a value within a fixed range) the
effective-n beta interval inside that range, an amount (cost, latency) a Student t interval. Protocols name their
metrics by id; registering a protocol with an undeclared id fails, naming the close matches.

This module imports nothing from the rest of core but the registry, so every layer may import it. Metrics shared by
several protocols are declared here; a protocol's own aggregates are declared in its module with `declare`.
"""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from core.registry import Registry, UnknownNameError, unknown_name_message

MetricKind = Literal["rate", "bounded", "amount"]
ScoreState = Literal["scored", "not_applicable", "unparseable", "judge_error", "unjudged", "skipped"]
Producer = Literal["lexical", "rule", "heuristic", "llm", "measured", "derived"]
UnparseablePolicy = Literal["wrong", "excluded"]

KINDS: tuple[MetricKind, ...] = ("rate", "bounded", "amount")
STATES: tuple[ScoreState, ...] = ("scored", "not_applicable", "unparseable", "judge_error", "unjudged", "skipped")
INTERVAL_FAMILIES: dict[MetricKind, str] = {"rate": "clopper-pearson", "bounded": "beta-effective-n",
                                            "amount": "student-t"}
VERDICT_STATES: dict[str, ScoreState] = {"ok": "scored", "error": "judge_error", "not_applicable": "not_applicable",
                                         "unparseable": "unparseable"}  # stored verdict status -> score state
JUDGED: tuple[Producer, ...] = ("heuristic", "llm")
USUAL_STATES: tuple[ScoreState, ...] = ("scored", "not_applicable", "judge_error", "unjudged")
UNIT_RANGE = (0.0, 1.0)
NON_NEGATIVE = (0.0, math.inf)
# a metric's own computation (the types live in core.scoring, which imports this module):
LexicalCompute = Callable[[Any, str, str | None], Any]  # (ReferenceSpec, response, language) -> MetricOutcome
JudgedCompute = Callable[[Any, Any], Awaitable[Any]]  # (Judge, JudgeInput) -> MetricOutcome


def resolve_hook(hook: Any) -> Any:
    """A computation hook as a callable: a 'module:function' name is imported (once per module) and looked up."""
    if not isinstance(hook, str):
        return hook
    module, _, name = hook.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class MetricDeclaration:
    """One metric: what it is called, what its values mean, which interval it gets and which states it can take.

    `scale` multiplies values for display (100: a share shown in percent); `unparseable` says whether a response
    whose answer cannot be read counts as wrong (value 0, the default) or is left out; either way it is counted.
    """

    id: str
    label: str
    kind: MetricKind
    judges: tuple[Producer, ...]
    range: tuple[float, float] = UNIT_RANGE
    higher_is_better: bool = True
    unit: str = "share"
    scale: float = 100.0
    states: tuple[ScoreState, ...] = USUAL_STATES
    unparseable: UnparseablePolicy = "wrong"
    description: str = ""  # its meaning in one line of plain words, for a product owner
    floor: float | None = None  # a sensible default floor (a ceiling when lower is better) for a decision, if any
    # pure, per response (no reference: n/a); a callable or its 'module:function' name, imported when first used (so a
    # protocol's declaration need not import the scoring layer its computation uses)
    compute: LexicalCompute | str | None = field(default=None, compare=False)
    judged: JudgedCompute | str | None = field(default=None, compare=False)  # async, per response, by the scoring judge

    def __post_init__(self) -> None:
        problems = [*self._kind_problems(), *self._state_problems()]
        if not self.id or not self.label or not self.judges:
            problems.append("needs an id, a label and at least one judge")
        if self.floor is not None and not self.within_range(self.floor):
            problems.append(f"floor {self.floor} is outside the range {self.range}")
        if self.compute is not None and self.judged is not None:
            problems.append("gives either a lexical `compute` or a `judged` computation, not both")
        if problems:
            raise ValueError(f"metric {self.id!r}: {'; '.join(problems)}")

    def _kind_problems(self) -> list[str]:
        low, high = self.range
        if self.kind not in KINDS:
            return [f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}"]
        if not low < high:
            return [f"range must be (low, high) with low < high, got {self.range}"]
        if self.kind != "amount" and not (math.isfinite(low) and math.isfinite(high)):
            return [f"a {self.kind} needs a finite range, got {self.range}"]
        if self.kind == "rate" and self.range != UNIT_RANGE:
            return [f"a rate is a share of 0/1 outcomes: its range is {UNIT_RANGE}, got {self.range}"]
        return []

    def _state_problems(self) -> list[str]:
        unknown = [s for s in self.states if s not in STATES]
        problems = [f"unknown states {unknown}; known: {', '.join(STATES)}"] if unknown else []
        if "scored" not in self.states:
            problems.append("its states must include 'scored'")
        if self.unparseable not in ("wrong", "excluded"):
            problems.append(f"unparseable must be 'wrong' or 'excluded', got {self.unparseable!r}")
        return problems

    @property
    def interval_family(self) -> str:
        """The interval method the kind selects (a rate on 0/1 values: Clopper-Pearson)."""
        return INTERVAL_FAMILIES[self.kind]

    @property
    def counts_unparseable_as_wrong(self) -> bool:
        """Whether an unparseable response enters the mean as 0 (else it is left out); counted either way."""
        return "unparseable" in self.states and self.unparseable == "wrong"

    def counted_statuses(self) -> tuple[str, ...]:
        """The stored verdict statuses whose value enters the mean: 'ok', and 'unparseable' when it counts as wrong."""
        return ("ok", "unparseable") if self.counts_unparseable_as_wrong else ("ok",)

    def within_range(self, value: float) -> bool:
        """Whether `value` lies in the declared range (NaN never does)."""
        return self.range[0] <= value <= self.range[1]


    def lexical_compute(self) -> LexicalCompute | None:
        """The declared per-response computation (its 'module:function' name imported now), or None."""
        return resolve_hook(self.compute)

    def judged_compute(self) -> JudgedCompute | None:
        """The declared judged computation (its 'module:function' name imported now), or None."""
        return resolve_hook(self.judged)

    @property
    def computes_itself(self) -> bool:
        """Whether the declaration brings its own per-response computation (a protocol package's metric)."""
        return self.compute is not None or self.judged is not None


DECLARATIONS: Registry[MetricDeclaration] = Registry("metric")
DECLARED_BY: dict[str, str] = {}  # metric id -> the module that declared it


def declare(metric: MetricDeclaration) -> MetricDeclaration:
    """Add a declaration to the registry (a duplicate id raises ValueError); the declaring module is recorded."""
    DECLARATIONS.add(metric.id, metric)
    DECLARED_BY[metric.id] = sys._getframe(1).f_globals.get("__name__", "")
    return metric


def undeclare_package(package: str) -> list[str]:
    """Take the metrics declared by `package` or its modules out of the registry (a test's toy protocol); their ids."""
    ids = [m for m, owner in DECLARED_BY.items() if owner == package or owner.startswith(package + ".")]
    for metric_id in ids:
        DECLARATIONS.remove(metric_id)
        del DECLARED_BY[metric_id]
    return ids


def get_metric(metric_id: str) -> MetricDeclaration:
    """The declaration of `metric_id`; an unknown id lists the known ones and the close matches."""
    return DECLARATIONS.get(metric_id)


def check_declared(names: Iterable[str], owner: str) -> None:
    """Raise UnknownNameError when a name in `names` (of `owner`, e.g. "protocol 'x'") is not a declared metric."""
    for name in names:
        if name not in DECLARATIONS:
            message = unknown_name_message("metric", name, DECLARATIONS.names())
            raise UnknownNameError(f"{owner} names an undeclared metric: {message}")


def _rate(metric_id: str, label: str, judges: tuple[Producer, ...], **more) -> MetricDeclaration:
    return declare(MetricDeclaration(metric_id, label, "rate", judges, **more))


def _bounded(metric_id: str, label: str, judges: tuple[Producer, ...], **more) -> MetricDeclaration:
    return declare(MetricDeclaration(metric_id, label, "bounded", judges, **more))


# --------------------------------------------------------------------------- EnterpriseRAG and instruction following

_rate("constraint", "Constraint satisfied", ("rule", *JUDGED),
      description="one constraint of a response judged satisfied (1) or not (0)")
_bounded("loose_ias", "Loose IAS", ("derived",), description="share of a response's judged constraints satisfied")
_rate("strict_ias", "Strict IAS", ("derived",), floor=0.2,
      description="every constraint judged and satisfied (complete-case: undetermined on any error or unjudged)")
_rate("instruction_score", "Instruction score (FollowRAG)", ("derived",),
      description="share of all instructions followed, pooled over responses, each by IFEval's loose rule (or the "
                  "judge's verdict); FollowRAG's loose_instruction_score")
_bounded("loose_persona", "Loose IAS: persona", ("derived",))
_bounded("loose_output", "Loose IAS: output", ("derived",))
_bounded("loose_knowledge_protocol", "Loose IAS: knowledge protocol", ("derived",))
_bounded("faithfulness", "Faithfulness", JUDGED, description="share of the response's claims supported")
_bounded("coverage", "Answer Coverage", JUDGED, description="core claims covered, supplementary ones weighted")
_rate("rejection", "Rejection accuracy", ("lexical", *JUDGED), floor=0.4, description="a refusal where the answer is absent")
_rate("conflict_recognition", "Conflict recognition", JUDGED, description="the response names the conflict")
_rate("refusal", "Refusal", ("lexical", *JUDGED), higher_is_better=False,
      description="the response declines to answer")
_rate("over_abstention", "Over-abstention", ("derived",), higher_is_better=False,
      description="a refusal where the documents hold the answer")
declare(MetricDeclaration("orchestration_gap", "Orchestration gap (Loose − Strict)", "bounded", ("derived",),
                          range=(-1.0, 1.0), higher_is_better=False, unit="difference of shares",
                          description="shown Loose IAS minus shown Strict IAS (a point that assumes undetermined "
                                      "constraints are missing at random); its interval spans the MOVER interval "
                                      "of that point and the worst-case bound over undetermined constraints"))
declare(MetricDeclaration("cost_per_1k", "Generation cost per 1k instances (USD)", "amount", ("measured",),
                          range=NON_NEGATIVE, higher_is_better=False, unit="USD per 1k instances", scale=1.0,
                          states=("scored",), description="the generation calls only; the judges' calls are shown "
                                                          "apart and in the total on Pick a generator and a run's spend"))
declare(MetricDeclaration("latency_min_per_1k", "Latency per 1k instances (min, sequential)", "amount", ("measured",),
                          range=NON_NEGATIVE, higher_is_better=False, unit="minutes per 1k instances", scale=1.0,
                          states=("scored",)))

# --------------------------------------------------------------------------- reference metrics (lexical and judged)

_bounded("exact_match", "Exact match (containment)", ("lexical",), states=(*USUAL_STATES, "unparseable"),
         unparseable="wrong", description="an accepted answer contained; share of parts, or of gold answers for "
                                          "'multi'; a yes/no gold by polarity (none read: unparseable, counted as wrong)")
_rate("strict_exact_match", "Strict exact match", ("lexical",),
      description="the normalised response is exactly an accepted answer")
_bounded("token_f1", "Token F1", ("lexical",), description="word overlap between the response and the best gold answer")
_bounded("rouge_l", "ROUGE-L", ("lexical",),
         description="longest run of shared words, in order, between the response and the best gold answer")
_rate("mcq_accuracy", "MCQ accuracy", ("lexical",), states=(*USUAL_STATES, "unparseable"),
      unparseable="wrong", description="the option letter read from the response is the key; no readable letter: "
                                       "unparseable, counted as wrong")
_rate("all_gold_no_wrong", "All gold, no wrong answer", ("lexical",),
      description="every gold answer given and no known wrong answer")
_rate("wrong_answer", "Gives a designated wrong answer", ("lexical",), higher_is_better=False,
      description="the response repeats the wrong answer planted in the evidence")
_rate("correctness", "Correctness (judge)", JUDGED, description="a judge finds the answer right against the reference")
_bounded("consistency", "Consistency (judge)", JUDGED,
         description="a judge finds the answer agrees with the reference in substance")
_rate("judged_accuracy", "Judged accuracy", JUDGED, description="a judge finds the answer right for its question")

# --------------------------------------------------------------------------- each benchmark's own measures

_rate("rgb_accuracy", "RGB accuracy (noise robustness)", ("lexical",),
      description="RGB: every gold answer given and no 'insufficient information'")
_rate("rgb_rejection", "RGB rejection rate (negatives only)", ("lexical",),
      description="RGB: on a negatives-only prompt, says the documents do not suffice or refuses")
_rate("rgb_error_detection", "RGB error detection rate", ("lexical",),
      description="RGB: with counterfactual documents, says they hold factual errors")
_rate("rgb_error_correction", "RGB error correction rate", ("lexical",),
      description="RGB: among responses that detected the errors, the correct answer given")
_rate("rgb_integration", "RGB information integration accuracy", ("lexical",),
      description="RGB _int records: every part of the answer given")
_rate("ramdocs_accuracy", "RAMDocs accuracy (all gold, no wrong)", ("lexical",),
      description="RAMDocs: every gold answer and no wrong answer, single-answer records included")
declare(MetricDeclaration("crag_score", "CRAG score (accuracy − hallucination)", "bounded", ("lexical",),
                          range=(-1.0, 1.0), unit="score", description="CRAG: 1 correct, 0 missing, -1 hallucinated "
                                                                        "per response; the mean is accuracy minus "
                                                                        "hallucination rate"))
_rate("crag_accuracy", "CRAG accuracy", ("lexical",), description="CRAG: the response is correct")
_rate("crag_hallucination", "CRAG hallucination rate", ("lexical",), higher_is_better=False,
      description="CRAG: the response is neither correct nor 'I don't know'")
_rate("crag_missing", "CRAG missing rate", ("lexical",), higher_is_better=False,
      description="CRAG: the response says 'I don't know'")
_bounded("followrag_accuracy", "FollowRAG answer accuracy", ("lexical",),
         description="FollowRAG: 1 a gold alternative given, 0.5 partially, 0 not")
BENCHMARK_MEASURES = ("rgb_accuracy", "rgb_rejection", "rgb_error_detection", "rgb_error_correction",
                      "rgb_integration", "ramdocs_accuracy", "crag_score", "crag_accuracy", "crag_hallucination",
                      "crag_missing", "followrag_accuracy")  # core.scoring.benchmarks computes them


def concerns(metric_id: str, instance_uid: str) -> bool:
    """Whether a metric concerns an instance: a benchmark's own measure only that benchmark's instances (by the id's
    format prefix, 'rgb/...' for rgb_*; others get no verdict and no row for it), every other metric every instance."""
    return instance_uid.lower().startswith(concern_prefix(metric_id))


def concern_prefix(metric_id: str) -> str:
    """The instance id prefix a metric is limited to ('rgb/' for a measure of RGB's own), '' for every instance."""
    return metric_id.partition("_")[0] + "/" if metric_id in BENCHMARK_MEASURES else ""


# score state -> how a count of it reads (one, several)
STATE_WORDS: dict[ScoreState, tuple[str, str]] = {"scored": ("scored", "scored"),
                                                  "not_applicable": ("not applicable", "not applicable"),
                                                  "unparseable": ("unparseable", "unparseable"),
                                                  "judge_error": ("judge error", "judge errors"),
                                                  "unjudged": ("unjudged", "unjudged"), "skipped": ("skipped", "skipped")}


def _unparseable_note(metric: str | None) -> str:
    if metric is None:
        return ""
    return " (counted as wrong)" if get_metric(metric).counts_unparseable_as_wrong else " (left out)"


def state_text(totals: Mapping[ScoreState, int], metric: str | None = None) -> str:
    """'n = 412 scored · 3 unparseable (counted as wrong) · 2 judge errors · 11 not applicable · 0 unjudged ·
    0 skipped': every state counted, zeros included; `metric` says whether unparseable answers enter its mean."""
    parts = []
    for state in STATES:
        if state not in totals:
            continue
        count = int(totals[state])
        word = STATE_WORDS[state][0 if count == 1 else 1]
        parts.append(f"{count:,} {word}" + (_unparseable_note(metric) if state == "unparseable" else ""))
    return ("n = " + " · ".join(parts)) if parts else ""
