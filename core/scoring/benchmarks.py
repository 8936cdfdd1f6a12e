"""Each imported benchmark's own measures, as its authors define them (pure: no database, no model calls).

- **RGB** (Chen et al. 2024, chen700564/RGB `evalue.py`): a response is correct when every gold answer (any of its
  spellings) is contained and it does not say "insufficient information" / "信息不足"; negatives-only prompts (every
  document given is noise) are scored by rejection (that phrase, or a refusal overall); counterfactual prompts by
  error detection ("factual errors" / "事实性错误") and, among detected responses only, error correction (the correct
  answer given); `_int` records by information integration (every part of the answer).
- **RAMDocs** (Wang et al. 2025, MADAM-RAG): correct when the response gives ALL gold answers and NO wrong answer,
  single-answer records included.
- **CRAG** (facebookresearch/CRAG `local_evaluation.py`; Yang et al. 2024 §4.1): each response is correct, missing
  ("I don't know", or a refusal overall: the paper's "I'm sorry I can't find ...", which CRAG's own prompt turns into
  "I don't know" and our neutral prompt does not) or hallucinated; the score is accuracy minus hallucination rate (per response 1 / 0 / -1). False-premise questions are
  judged against their gold answer ("invalid question"): the response must say the question is invalid, and
  "I don't know" is missing there, never a correct rejection.
- **FollowRAG** (Dong et al. 2024, `rag_eval.py`): answer accuracy 1 / 0.5 / 0 (completely / partially / not
  correct), each slash-separated gold alternative accepted (its gold answers are joined by '/'); the instruction
  score is scored elsewhere.

Instances are recognised by their id's format prefix ("rgb/", "ramdocs/", "crag/", "followrag/").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.metrics import BENCHMARK_MEASURES
from core.scoring.judges.base import MetricOutcome
from core.scoring.judges.refusal import detect_refusal
from core.scoring.reference import (
    Prepared,
    answer_forms,
    answer_score,
    contains,
    normalize,
    not_applicable,
    scheme_for,
    scored,
    tokens,
    unify_marks,
    unsupported,
)
from core.store.schema import AnswerSpec, ReferenceSpec

RGB_REJECT = ("insufficient information", "信息不足")
RGB_FACT = ("factual errors", "事实性错误")
CRAG_MISSING = "i don't know"
CRAG_INVALID = "invalid"
CRAG_UNSURE_RE = re.compile(r"\b(?:not\s+(?:entirely\s+|completely\s+|quite\s+|100%\s+)?(?:sure|certain)|unsure|"
                            r"not\s+possible\s+to\s+determine|cannot\s+be\s+determined)\b|不确定|不確定")
FALSE_PREMISE = "false_premise"
PARTIAL_RECALL = 0.5
PARTIAL_TOKENS = 2
CRAG_VALUES = {"correct": 1.0, "missing": 0.0, "hallucinated": -1.0}


@dataclass(frozen=True)
class BenchmarkItem:
    """One response with what the benchmark measures need: reference, language, instance id, attributes, and the
    roles of the documents its prompt gave (prompt_meta 'doc_roles')."""

    ref: ReferenceSpec
    response: str
    language: str | None
    uid: str = ""
    attributes: Mapping[str, Any] = field(default_factory=dict)
    doc_roles: tuple[str, ...] = ()

    @property
    def benchmark(self) -> str:
        """The format an instance was imported from: its id's prefix ('rgb/en_fact/3' -> 'rgb')."""
        return self.uid.partition("/")[0].lower() if "/" in self.uid else ""

    def prepared(self) -> Prepared:
        """The response ready for the reference module's containment."""
        return Prepared(self.ref, self.response or "", scheme_for(self.language, self.ref))

    @property
    def negatives_only(self) -> bool:
        """Every document the prompt gave is noise (RGB's noise ratio 1: the rejection setting)."""
        return bool(self.doc_roles) and all(r == "noise" for r in self.doc_roles)

    @property
    def counterfactual(self) -> bool:
        """The prompt gave a counterfactual document (RGB's _fact records)."""
        return "counterfactual" in self.doc_roles

    @property
    def false_premise(self) -> bool:
        """A CRAG false-premise question (its gold answer is 'invalid question')."""
        return self.attributes.get("question_type") == FALSE_PREMISE


def lowered(text: str) -> str:
    """NFKC, quote variants made ASCII, lower-cased: the form phrase rules are checked on."""
    return unify_marks(text or "").lower()


def says(response: str, phrases: tuple[str, ...]) -> bool:
    """Whether the response contains one of `phrases` (case-insensitive, spaces ignored between Han characters)."""
    text = lowered(response)
    squeezed = text.replace(" ", "")
    return any(p in text or p in squeezed for p in phrases)


def all_gold(p: Prepared) -> list[str]:
    """The gold answers not contained in the response (empty: every gold answer given)."""
    return [a.text for a in p.ref.answers if answer_score(p.norm, a, p.kind) < 1]


def literal_gold(p: Prepared) -> list[str]:
    """The gold answers not contained, each read whole (RAMDocs' check: a gold answer with a slash, "AC/DC" or
    "Gravity/Gravitation", is one answer, never two alternatives)."""
    return [a.text for a in p.ref.answers
            if not any(contains(p.norm, normalize(f, p.kind), p.kind) for f in (a.text, *a.aliases))]


def wrong_given(p: Prepared) -> list[str]:
    """The wrong answers contained anywhere in the response, the gold answers' own text included: RAMDocs'
    published check (run_madam_rag.py), so a wrong answer that is part of a gold answer fails every complete answer
    (the importer warns about such records)."""
    return [w for w in p.ref.wrong_answers if contains(p.norm, normalize(w, p.kind), p.kind)]


def only_for(item: BenchmarkItem, benchmark: str) -> MetricOutcome | None:
    """Not applicable unless the instance comes from `benchmark`, or its language cannot be tokenised."""
    if item.benchmark != benchmark:
        return not_applicable(f"applies to {benchmark} instances only")
    scheme = scheme_for(item.language, item.ref)
    return unsupported(scheme.language) if scheme.kind is None else None


# --------------------------------------------------------------------------- RGB

def rgb_label(item: BenchmarkItem) -> MetricOutcome:
    """RGB's answer check: 'insufficient information' is never correct; else every gold answer (any spelling)."""
    if says(item.response, RGB_REJECT):
        return scored(0.0, "says insufficient information", missing=[a.text for a in item.ref.answers])
    missing = all_gold(item.prepared())
    return scored(float(not missing), f"missing {missing}" if missing else "every gold answer given", missing=missing)


def rgb_accuracy(item: BenchmarkItem) -> MetricOutcome:
    """RGB noise robustness accuracy (plain and counterfactual records, not negatives-only prompts)."""
    if (na := only_for(item, "rgb")) is not None:
        return na
    if "_int/" in item.uid:
        return not_applicable("an _int record: scored by rgb_integration")
    if item.negatives_only:
        return not_applicable("negatives-only prompt: scored by rgb_rejection")
    return rgb_label(item)


def rgb_integration(item: BenchmarkItem) -> MetricOutcome:
    """RGB information integration accuracy: every part of an _int record's answer given."""
    if (na := only_for(item, "rgb")) is not None:
        return na
    if "_int/" not in item.uid:
        return not_applicable("applies to RGB _int records only")
    if item.negatives_only:
        return not_applicable("negatives-only prompt: scored by rgb_rejection")
    return rgb_label(item)


def rgb_rejection(item: BenchmarkItem) -> MetricOutcome:
    """RGB negative rejection: on a negatives-only prompt, 1 when the response says the documents do not suffice
    ("insufficient information" / "信息不足": RGB's own rule, evalue.py, which counts any other response as an answer)
    or refuses overall; a hedged refusal that gives a guess ("I cannot answer ..., but my best guess is X") answers,
    by RGB's rule as by `detect_refusal`, so it is not a rejection."""
    if (na := only_for(item, "rgb")) is not None:
        return na
    if not item.negatives_only:
        return not_applicable("applies to negatives-only prompts (every document noise) only")
    if says(item.response, RGB_REJECT):
        return scored(1.0, "says insufficient information")
    refused, phrases = detect_refusal(item.response)
    return scored(float(refused), f"refuses: {phrases}" if refused else "answers instead of rejecting")


def rgb_error_detection(item: BenchmarkItem) -> MetricOutcome:
    """RGB error detection: on a prompt with counterfactual documents, 1 when the response says they hold factual
    errors ("factual errors" / "事实性错误")."""
    if (na := only_for(item, "rgb")) is not None:
        return na
    if not item.counterfactual:
        return not_applicable("applies to prompts with counterfactual documents only")
    found = says(item.response, RGB_FACT)
    return scored(float(found), "says the documents hold factual errors" if found else "no factual errors named")


def rgb_error_correction(item: BenchmarkItem) -> MetricOutcome:
    """RGB error correction: among responses that detected the factual errors, 1 when the correct answer is given."""
    detected = rgb_error_detection(item)
    if detected.status != "ok":
        return detected
    if not detected.passed:
        return not_applicable("errors not detected: the correction rate counts detected responses only")
    missing = all_gold(item.prepared())
    return scored(float(not missing), f"missing {missing}" if missing else "the correct answer given", missing=missing)


# --------------------------------------------------------------------------- RAMDocs

def ramdocs_accuracy(item: BenchmarkItem) -> MetricOutcome:
    """RAMDocs exact match: every gold answer given, each read whole (`literal_gold`), and no wrong answer anywhere in
    the response (published rule)."""
    if (na := only_for(item, "ramdocs")) is not None:
        return na
    p = item.prepared()
    missing, wrong = literal_gold(p), wrong_given(p)
    ok = not missing and not wrong
    why = "every gold answer, no wrong answer" if ok else "; ".join(
        x for x in (f"missing {missing}" if missing else "", f"wrong {wrong}" if wrong else "") if x)
    return scored(float(ok), why, missing=missing, wrong=wrong)


# --------------------------------------------------------------------------- CRAG

def crag_judged(item: BenchmarkItem, answer: AnswerSpec) -> bool:
    """Where CRAG asks its judge: the gold answer (any spelling) contained and the response not unsure (CRAG's grading
    rule 2)."""
    p = item.prepared()
    return not CRAG_UNSURE_RE.search(lowered(item.response)) and answer_score(p.norm, answer, p.kind) == 1


def crag_gold_verdict(item: BenchmarkItem, answer: AnswerSpec) -> tuple[bool, str]:
    """CRAG's check of one ground truth (local_evaluation.py `evaluate_predictions`, in its order): the response
    equal to it (lower-cased) is correct; 'invalid' in both is correct; 'invalid' in one only is a hallucination;
    else the judge (`crag_judged`)."""
    text = lowered(item.response).strip()
    forms = [lowered(f).strip() for f in answer_forms(answer)]
    if text in forms:
        return True, "equals the gold answer"
    invalid_said, invalid_gold = CRAG_INVALID in text, any(CRAG_INVALID in f for f in forms)
    if invalid_said and invalid_gold:
        return True, "says the question is invalid, as the gold answer does"
    if invalid_said or invalid_gold:
        return False, "calls a valid question invalid" if invalid_said else "does not say the question is invalid"
    return (True, "gives the gold answer") if crag_judged(item, answer) else (False, "no gold answer given")


def crag_class(item: BenchmarkItem) -> tuple[str, str]:
    """(correct | missing | hallucinated, why) by CRAG's rule (local_evaluation.py): "i don't know" is missing (and a
    refusal overall, the paper's "I'm sorry I can't find ..."); else correct when one ground truth's check passes.
    False-premise rows follow the same rule against their own gold: "invalid question" where the gold says so, the
    gold sentence where it is one (the published row's "rory mcilroy has never won ...")."""
    if CRAG_MISSING in lowered(item.response):
        return "missing", "says I don't know"
    if detect_refusal(item.response)[0]:  # CRAG's paper: "I'm sorry I can't find ..." is missing too
        return "missing", "refuses"
    whys = []
    for answer in item.ref.answers:
        ok, why = crag_gold_verdict(item, answer)
        if ok:
            return "correct", why
        whys.append(why)
    return "hallucinated", whys[-1] if whys else "no gold answer"


def crag_outcome(item: BenchmarkItem, measure: str) -> MetricOutcome:
    """One CRAG measure of a response: 'score' (1 / 0 / -1) or the 0/1 rate of one class."""
    if item.benchmark != "crag":
        return not_applicable("applies to crag instances only")
    kind, why = crag_class(item)
    value = CRAG_VALUES[kind] if measure == "score" else float(kind == measure)
    return MetricOutcome(value=value, passed=None if measure == "score" else bool(value), reason=f"{kind}: {why}",
                         method="reference", details={"crag": kind})


# --------------------------------------------------------------------------- FollowRAG

def recall_of(p: Prepared, form: str) -> float:
    """Share of a gold form's tokens found in the response's tokens; 0 unless at least PARTIAL_TOKENS are (one shared
    word, "season" of "season two", is not a partial answer)."""
    gold = tokens(form, p.kind)
    have = set(tokens(p.response, p.kind))
    found = sum(t in have for t in gold)
    return found / len(gold) if found >= PARTIAL_TOKENS else 0.0


def followrag_forms(ref: ReferenceSpec) -> list[str]:
    """FollowRAG's gold alternatives: its answer_gold joins every accepted answer with '/' ("1999/2001",
    "United States/1958/Houghton Mifflin"), so every slash separates two (the generic rule keeps "km/h" whole)."""
    forms = [f for a in ref.answers for form in answer_forms(a) for f in (form, *form.split("/"))]
    return list(dict.fromkeys(f.strip() for f in forms if f.strip()))


def followrag_accuracy(item: BenchmarkItem) -> MetricOutcome:
    """FollowRAG answer accuracy: 1 when a gold alternative is given, 0.5 when at least half of one's words are, two at
    least (partially correct), else 0; a refusal scores 0."""
    if (na := only_for(item, "followrag")) is not None:
        return na
    p = item.prepared()
    forms = followrag_forms(p.ref)
    if any(contains(p.norm, normalize(f, p.kind), p.kind) for f in forms):
        return scored(1.0, "a gold alternative is given")
    if detect_refusal(item.response)[0]:
        return scored(0.0, "refuses")
    best = max((recall_of(p, f) for f in forms), default=0.0)
    value = 0.5 if best >= PARTIAL_RECALL else 0.0
    return scored(value, f"best gold word recall {best:.2f}", recall=best)


BENCHMARK_METRIC_FNS: dict[str, Callable[[BenchmarkItem], MetricOutcome]] = {
    "rgb_accuracy": rgb_accuracy,
    "rgb_rejection": rgb_rejection,
    "rgb_error_detection": rgb_error_detection,
    "rgb_error_correction": rgb_error_correction,
    "rgb_integration": rgb_integration,
    "ramdocs_accuracy": ramdocs_accuracy,
    "crag_score": lambda item: crag_outcome(item, "score"),
    "crag_accuracy": lambda item: crag_outcome(item, "correct"),
    "crag_hallucination": lambda item: crag_outcome(item, "hallucinated"),
    "crag_missing": lambda item: crag_outcome(item, "missing"),
    "followrag_accuracy": followrag_accuracy,
}
BENCHMARK_METRICS: tuple[str, ...] = tuple(BENCHMARK_METRIC_FNS)
assert BENCHMARK_METRICS == BENCHMARK_MEASURES, "core.metrics.BENCHMARK_MEASURES names these measures, in this order"


def benchmark_metric(name: str, item: BenchmarkItem) -> MetricOutcome:
    """One benchmark measure (a name of BENCHMARK_METRICS) of a response; not_applicable where it does not apply."""
    return BENCHMARK_METRIC_FNS[name](item)


def benchmark_override(name: str, item: BenchmarkItem) -> MetricOutcome | None:
    """A generic reference metric a benchmark judges its own way: CRAG false-premise questions are scored against their
    gold answer by the crag_* measures, so `rejection` (any refusal) does not apply to them."""
    if name == "rejection" and item.benchmark == "crag" and item.false_premise:
        return not_applicable("CRAG false premise: judged against its gold answer ('invalid question') by crag_*")
    return None
