"""ALCE's published outputs scored by this protocol's one computation (`metrics.tally`, `citation_recall`,
`citation_precision`), and the agreements the file lets us measure: our computation replaying ALCE's own NLI verdicts
against ALCE's per-response numbers; ALCE's NLI against the annotators; a judge against the annotators (per sentence:
supported by its citations or not), each with n, Cohen's kappa and what was left undecided."""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.analysis.label_kinds import Agreement
from core.analysis.stats import cohen_kappa
from core.config import REPO_ROOT
from core.scoring.judges.base import DocumentView, JudgeInput

from .builder_alce_eval import AlceResponse, read_alce_human_eval
from .metrics import (
    Oracle,
    citation_precision,
    citation_recall,
    format_document,
    remove_citations,
    split_sentences,
    tally,
)


def judge_input(resp: AlceResponse) -> JudgeInput:
    """The response as a judge sees it: the cited documents under their numbers, the output as the answer."""
    docs = [DocumentView(position=n, doc_uid=f"{resp.uid}-d{n}", title=d["title"], text=d["text"])
            for n, d in sorted(resp.documents.items())]
    return JudgeInput(query=resp.question, mode="reference", documents=docs, response=resp.output, uid=resp.uid,
                      prompt_meta={"citation_docs": resp.citation_docs()})


def passage(resp: AlceResponse, numbers: Sequence[int]) -> str:
    """The cited documents joined as ALCE gives them to its NLI model."""
    return "\n".join(format_document(_Doc(**resp.documents[n])) for n in numbers)


@dataclass(frozen=True)
class _Doc:
    title: str
    text: str


def replay_oracle(resp: AlceResponse) -> Oracle:
    """ALCE's published NLI verdicts as the support oracle: the joint verdict per sentence; for a supported sentence
    citing several documents, each alone (2: supports alone) and the rest without it (1: needed, so the rest do not
    support; 0: not needed, so they do). A question ALCE did not ask, or answered both ways, is undecided (None)."""
    verdicts: dict[tuple[str, str], bool | None] = {}

    def put(key: tuple[str, str], value: bool) -> None:
        verdicts[key] = value if verdicts.get(key, value) == value else None

    for s in resp.sentences:
        if not s.cited:
            continue
        claim = remove_citations(s.text).strip()
        put((passage(resp, s.cited), claim), bool(s.auto_support))
        if not s.auto_support or len(s.cited) < 2:
            continue
        for n, score in zip(s.cited, s.auto_citations, strict=True):
            put((passage(resp, [n]), claim), score == 2)
            if score < 2:
                put((passage(resp, [m for m in s.cited if m != n]), claim), score == 0)

    async def oracle(text: str, claim: str) -> bool | None:
        return verdicts.get((text, claim))

    return oracle


def published_scores(resp: AlceResponse, rater: str) -> tuple[float, float]:
    """(citation recall, citation precision) of one response from the file's per-sentence verdicts, aggregated as
    ALCE's compute_autoais (rater 'auto') and human_eval/analyze.py (rater 'human') do."""
    support = [s.auto_support if rater == "auto" else s.human_support for s in resp.sentences]
    cites = [s.auto_citations if rater == "auto" else s.human_citations for s in resp.sentences]
    needed = sum(min(x, 1) for ok, c in zip(support, cites, strict=True) if ok for x in c)
    n_cites = sum(len(c) for c in cites)
    return sum(support) / len(support), (needed / n_cites if n_cites else 0.0)


async def replayed_scores(resp: AlceResponse) -> tuple[float | None, float | None, int]:
    """Our tally of the response with ALCE's NLI verdicts replayed: (recall, precision, sentences undecided)."""
    passages = [format_document(_Doc(**resp.documents[n])) if n in resp.documents else None
                for n in range(1, resp.ndoc() + 1)]
    counts = await tally(resp.output, passages, replay_oracle(resp))
    if counts.undecided or not counts.sentences:
        return None, None, counts.undecided
    return (counts.entail / counts.sentences, counts.entail_prec / counts.citations if counts.citations else 0.0, 0)


@dataclass
class AlceComparison:
    """Every figure of one judge and our computation on ALCE's published outputs."""

    judge: str
    n_responses: int
    n_sentences: int
    n_citations: int
    split_same: int  # responses our splitter cuts into exactly ALCE's sentences
    replay_same: int  # responses where our tally with ALCE's verdicts gives ALCE's recall and precision
    replay_undecided: int
    nli_vs_human: Agreement  # sentence support: ALCE's NLI against the annotators
    nli_vs_human_citations: Agreement  # citation needed: ALCE's NLI against the annotators
    judge_vs_human: Agreement  # sentence support: the judge against the annotators
    judge_vs_nli: Agreement
    states: dict[str, Counter[str]] = field(default_factory=dict)  # metric -> state counts of the judge's scores

    def lines(self) -> list[str]:
        """The comparison as report lines."""
        states = "; ".join(f"{m}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())) for m, c in self.states.items())
        return [f"{self.n_responses} responses, {self.n_sentences} sentences, {self.n_citations} citations",
                f"sentence split as ALCE's: {self.split_same} of {self.n_responses} responses",
                f"our computation with ALCE's NLI verdicts = ALCE's recall and precision: {self.replay_same} of "
                f"{self.n_responses} responses ({self.replay_undecided} sentences undecided)",
                f"ALCE NLI vs annotators, sentence support: {self.nli_vs_human.line()}",
                f"ALCE NLI vs annotators, citation needed: {self.nli_vs_human_citations.line()}",
                f"judge {self.judge} vs annotators, sentence support: {self.judge_vs_human.line()}",
                f"judge {self.judge} vs ALCE NLI, sentence support: {self.judge_vs_nli.line()}",
                f"judge {self.judge} states: {states}"]


def judge_sentence_verdicts(resp: AlceResponse, details: dict[str, Any]) -> list[int | None]:
    """The judge's support verdict on each of ALCE's sentences (None: undecided or not one of our sentences)."""
    by_text = {row["sentence"]: row.get("supported") for row in details.get("sentences", [])}
    return [None if by_text.get(s.text) is None else int(bool(by_text[s.text])) for s in resp.sentences]


def _citation_pairs(resp: AlceResponse) -> tuple[list[int], list[int]]:
    nli = [0 if not s.auto_support else min(x, 1) for s in resp.sentences for x in s.auto_citations]
    human = [0 if not s.human_support else min(int(x), 1) for s in resp.sentences for x in s.human_citations]
    return nli, human


async def compare(judge: Any, responses: Sequence[AlceResponse]) -> AlceComparison:
    """Score every response with `judge` through the protocol's metrics and measure every agreement."""
    split_same = replay_same = replay_undecided = 0
    judge_v: list[int | None] = []
    nli_c: list[int] = []
    human_c: list[int] = []
    states: dict[str, Counter[str]] = {"citation.recall": Counter(), "citation.precision": Counter()}
    for resp in responses:
        split_same += split_sentences(resp.output) == [s.text for s in resp.sentences]
        recall, precision, undecided = await replayed_scores(resp)
        replay_undecided += undecided
        alce = published_scores(resp, "auto")
        replay_same += recall is not None and precision is not None and all(
            math.isclose(a, b) for a, b in zip((recall, precision), alce, strict=True))
        item = judge_input(resp)
        rec, prec = await citation_recall(judge, item), await citation_precision(judge, item)
        for name, out in (("citation.recall", rec), ("citation.precision", prec)):
            states[name][out.status if out.status != "ok" else "scored"] += 1
        judge_v += judge_sentence_verdicts(resp, rec.details)
        nli, human = _citation_pairs(resp)
        nli_c += nli
        human_c += human
    sentences = [s for r in responses for s in r.sentences]
    human_s = [s.human_support for s in sentences]
    nli_s = [s.auto_support for s in sentences]
    return AlceComparison(
        judge=getattr(judge, "name", str(judge)), n_responses=len(responses), n_sentences=len(sentences),
        n_citations=len(nli_c), split_same=split_same, replay_same=replay_same, replay_undecided=replay_undecided,
        nli_vs_human=Agreement.of(nli_s, human_s), nli_vs_human_citations=Agreement.of(nli_c, human_c),
        judge_vs_human=Agreement.of(judge_v, human_s), judge_vs_nli=Agreement.of(judge_v, nli_s), states=states)


def compare_sync(judge: Any, responses: Sequence[AlceResponse]) -> AlceComparison:
    """`compare` run to completion (for the CLI and tests)."""
    return asyncio.run(compare(judge, responses))


# --------------------------------------------------------------------------- `gauntlet judge check --suite alce-citations`

SUITE = "alce-citations"
NO_CERTIFICATE = ("ALCE publishes one annotator per sentence: no human-vs-human row to certify against, so agreement "
                  "and kappa only")
SUITE_PATH = REPO_ROOT / "data" / "suites" / "alce" / "human_eval_citations_subset.json"


async def judge_support_verdicts(judge: Any, responses: Sequence[AlceResponse]) -> tuple[list[int | None], int, float]:
    """The judge's support verdict on every ALCE sentence (None: undecided), with its calls and cost."""
    verdicts: list[int | None] = []
    calls, cost = 0, 0.0
    for resp in responses:
        out = await citation_recall(judge, judge_input(resp))
        calls, cost = calls + out.calls, cost + out.cost_usd
        verdicts += judge_sentence_verdicts(resp, out.details)
    return verdicts, calls, cost


async def check_alce_citations(judge: Any, limit: int | None = None) -> Any:
    """The judge's sentence-support verdicts against ALCE's annotators (sentence_recall_score), on the first `limit`
    responses of the shipped subset: agreement, kappa with its interval, n and the sentences left undecided."""
    from core.analysis.judge_check import CheckResult, Fitness, judge_version

    responses = read_alce_human_eval(SUITE_PATH)[:limit]
    verdicts, calls, cost = await judge_support_verdicts(judge, responses)
    human = [s.human_support for r in responses for s in r.sentences]
    model, prompt_hash = judge_version(judge)
    return CheckResult(judge=judge.name, judge_model=model, prompt_hash=prompt_hash, suite=SUITE,
                       n_pairs=len(human), calls=calls, cost_usd=cost, dimensions=[support_dimension(verdicts, human)],
                       uncertified=NO_CERTIFICATE, fitness=Fitness("undetermined", NO_CERTIFICATE))


def support_dimension(verdicts: Sequence[int | None], human: Sequence[int]) -> Any:
    """The judge-check row of binary support verdicts against one annotator per sentence: agreement and Cohen's
    kappa with its 95% interval over the decided sentences (Pearson = phi, Spearman the same on 0/1), None where
    undefined (one class on a side); undecided sentences counted, never filled."""
    from core.analysis.judge_check import DimensionResult, clip_ci

    pairs = [(v, h) for v, h in zip(verdicts, human, strict=True) if v is not None]
    k = cohen_kappa([v for v, _ in pairs], [h for _, h in pairs]) if pairs else None
    defined = k is not None and len({v for v, _ in pairs}) > 1 and len({h for _, h in pairs}) > 1
    kappa = k.kappa if k is not None and defined else None
    ci = clip_ci(k.ci_low, k.ci_high) if k is not None and defined else None
    phi = _phi(pairs) if defined else None
    return DimensionResult(
        dimension="support", n_pairs=len(human), n_labels=len(human), n_missing=len(human) - len(pairs),
        pearson=phi, pearson_ci=None, spearman=phi, spearman_ci=None,
        agreement=k.agreement if k else None, kappa=kappa, kappa_ci=ci, n_agreement=len(pairs))


def _phi(pairs: Sequence[tuple[int, int]]) -> float:
    """The phi coefficient (Pearson on 0/1) of decided pairs with both classes on each side."""
    n = len(pairs)
    a, b = sum(v for v, _ in pairs) / n, sum(h for _, h in pairs) / n
    cov = sum((v - a) * (h - b) for v, h in pairs) / n
    return cov / math.sqrt(a * (1 - a) * b * (1 - b))
