"""The citation protocol's recall and precision of one response, sentence by sentence as ALCE's `compute_autoais`
computes them (princeton-nlp/ALCE eval.py at 246c476): a sentence without citations, or citing a document that is not
there, is unsupported; otherwise its first AT_MOST_CITATIONS cited documents, joined, are asked whether they support
the sentence (citations removed). Recall = supported sentences / sentences. Precision = needed citations / citations:
a sentence citing one document counts 1 when supported; a supported sentence citing several counts each document that
supports it alone, or whose removal leaves the rest unsupported (else it is an over-citation); an unsupported
sentence's citations count 0. Support comes from `Support` (the judge); where it cannot decide, the outcome is not
applicable with the reason, and the sentences it did decide are in the details."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from core.generation.reasoning import split_reasoning
from core.scoring.checkers.sentences import split_sentences as punkt_like_sentences
from core.scoring.citation_marks import cited_documents, normalise_labels
from core.scoring.judges.base import JudgeInput, MetricOutcome

from . import AT_MOST_CITATIONS
from .judge import SupportInput, judge_support

NEEDS_LLM = "support of a cited sentence needs an LLM judge (score with --judge llm:<model>)"
Oracle = Callable[[str, str], Awaitable[bool | None]]  # (passage, claim) -> supported, None: cannot decide


def split_sentences(text: str) -> list[str]:
    """The answer's sentences: the product's splitter tuned to agree with NLTK's English Punkt model (ALCE calls
    `sent_tokenize`), after the document labels are written '[N]'."""
    return punkt_like_sentences(normalise_labels(text).strip())


def cited(sentence: str) -> list[int]:
    """The 0-based document indices a sentence cites, in order (ALCE: int(r[1:]) - 1 for each '[<digits>')."""
    return [n - 1 for n in cited_documents(sentence)]


def remove_citations(sentence: str) -> str:
    """The sentence without its citations, as ALCE's utils.remove_citations leaves it."""
    return re.sub(r"\[\d+", "", re.sub(r" \[\d+", "", sentence)).replace(" |", "").replace("]", "")


class JudgeFailed(Exception):
    """The judge could not give a verdict (an error outcome)."""


@dataclass
class Tally:
    """ALCE's per-response counts, and what was decided sentence by sentence."""

    sentences: int = 0
    entail: int = 0
    entail_prec: int = 0
    citations: int = 0
    undecided: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)


def format_document(doc: Any) -> str:
    """A document as ALCE gives it to the NLI model: 'Title: <title>' then its text."""
    return f"Title: {doc.title}\n{doc.text}"


async def sentence_precision(oracle: Oracle, passages: list[str | None], refs: list[int], claim: str) -> int | None:
    """The needed citations of a supported sentence citing several documents (None: undecided)."""
    needed = 0
    for ref in refs:
        alone = await oracle(passages[ref] or "", claim)
        if alone is None:
            return None
        if alone:
            needed += 1
            continue
        rest = await oracle("\n".join(passages[r] or "" for r in refs if r != ref), claim)
        if rest is None:
            return None
        needed += 0 if rest else 1
    return needed


async def tally(answer: str, passages: list[str | None], oracle: Oracle) -> Tally:
    """ALCE's counts over the answer's sentences, support asked of `oracle` (a None passage: a number the response
    could cite but whose document is not there)."""
    result = Tally()
    sents = split_sentences(answer)
    result.sentences = len(sents)
    for sent in sents:
        refs, claim = cited(sent), remove_citations(sent).strip()
        row: dict[str, Any] = {"sentence": sent, "cited": [r + 1 for r in refs]}
        if not refs or any(r >= len(passages) or r < 0 for r in refs) or any(
                passages[r] is None for r in refs[:AT_MOST_CITATIONS]):
            row.update(supported=False, by="rule", why="no citation" if not refs else "cites a missing document")
            result.rows.append(row)
            continue
        refs = refs[:AT_MOST_CITATIONS]  # as ALCE: the range check covers every citation, support the first three
        result.citations += len(refs)
        joint = await oracle("\n".join(passages[r] or "" for r in refs), claim)
        if joint is None:
            result.undecided += 1
            result.rows.append({**row, "supported": None, "by": "undecided"})
            continue
        result.entail += int(joint)
        needed = (await sentence_precision(oracle, passages, refs, claim)) if joint and len(refs) > 1 else int(joint)
        if needed is None:
            result.undecided += 1
            result.rows.append({**row, "supported": joint, "by": "judge", "needed": None})
            continue
        result.entail_prec += needed
        result.rows.append({**row, "supported": joint, "by": "judge", "needed": needed})
    return result


def judge_oracle(judge: Any, spent: dict[str, float]) -> Oracle:
    """Support asked of an LLM judge (calls and cost added to `spent`); another judge cannot decide (None)."""
    from core.scoring.judges.llm_judge import LLMJudge

    async def oracle(passage: str, claim: str) -> bool | None:
        if not isinstance(judge, LLMJudge):
            return None
        supported, info = await judge_support(judge.client, SupportInput(claim=claim, passage=passage))
        spent["calls"] += info["calls"]
        spent["cost_usd"] += info["cost_usd"]
        if supported is None:
            raise JudgeFailed(info["error"] or "judge error")
        return supported

    return oracle


def cited_passages(item: JudgeInput) -> list[str | None]:
    """The documents in the order the prompt numbered them (prompt_meta `citation_docs`), as ALCE formats them; a
    number whose document is not there keeps its place as None."""
    by_uid = {d.doc_uid: d for d in item.documents}
    order = item.prompt_meta.get("citation_docs") or [d.doc_uid for d in item.documents]
    return [format_document(by_uid[uid]) if uid in by_uid else None for uid in order]


async def citation_tally(judge: Any, item: JudgeInput) -> tuple[Tally | None, MetricOutcome | None, dict[str, float]]:
    """The response's tally, or the outcome that stands instead (unparseable, judge error)."""
    spent = {"calls": 0, "cost_usd": 0.0}
    split = split_reasoning(item.response)
    if split.unfinished:
        return None, MetricOutcome(status="unparseable", reason="the reasoning never finished"), spent
    try:
        counts = await tally(split.answer, cited_passages(item), judge_oracle(judge, spent))
    except JudgeFailed as exc:
        return None, MetricOutcome(status="error", reason=str(exc), method="llm", calls=int(spent["calls"]),
                                   cost_usd=spent["cost_usd"]), spent
    if counts.sentences == 0:
        return None, MetricOutcome(status="unparseable", reason="the answer has no sentence"), spent
    return counts, None, spent


def outcome(counts: Tally, value: float, spent: dict[str, float], what: str) -> MetricOutcome:
    """The metric's outcome from the tally: not applicable where the judge could not decide a sentence."""
    details = {"sentences": counts.rows, "n_sentences": counts.sentences, "citations": counts.citations}
    method = "llm" if spent["calls"] else "rule"
    if counts.undecided:
        return MetricOutcome(status="not_applicable", reason=f"{counts.undecided} of {counts.sentences} sentences: "
                                                             f"{NEEDS_LLM}", method=method, details=details)
    return MetricOutcome(value=value, reason=what, method=method, calls=int(spent["calls"]),
                         cost_usd=spent["cost_usd"], details=details)


async def citation_recall(judge: Any, item: JudgeInput) -> MetricOutcome:
    """Supported sentences / sentences (ALCE's citation_rec of one response)."""
    counts, failed, spent = await citation_tally(judge, item)
    if counts is None:
        return failed  # type: ignore[return-value]
    return outcome(counts, counts.entail / counts.sentences, spent,
                   f"{counts.entail} of {counts.sentences} sentences supported by their citations")


async def citation_precision(judge: Any, item: JudgeInput) -> MetricOutcome:
    """Needed citations / citations, 0 without citations (ALCE's citation_prec of one response)."""
    counts, failed, spent = await citation_tally(judge, item)
    if counts is None:
        return failed  # type: ignore[return-value]
    value = counts.entail_prec / counts.citations if counts.citations else 0.0
    return outcome(counts, value, spent, f"{counts.entail_prec} of {counts.citations} citations needed")
