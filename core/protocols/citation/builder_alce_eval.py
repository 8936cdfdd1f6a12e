"""ALCE's published evaluated outputs as citation responses: the human-evaluation file of princeton-nlp/ALCE
(`human_eval/human_eval_citations_completed.json`: {dataset: {result file: {question id: record}}}), each record a
model's output with its sentences, the documents each sentence cites (title, text; at most 3 per sentence, as ALCE
evaluates), ALCE's automatic NLI verdicts (`automatic_recall_scores` per sentence, `automatic_citation_precision_scores`
per citation: 2 supports alone, 1 needed with the others, 0 not needed) and the annotators' labels
(`sentence_recall_score` 0/1, `citation_precision_score` 0 none / 1 partial / 2 full support).

A cited document keeps its number: the instance's documents are the cited ones, `{uid}-d{N}` for citation [N], and
`citation_docs` numbers 1..max (a number no sentence cites has no document: ALCE does not publish it). A record whose
sentences and citations do not pair up is refused with the record and field named; nothing is half-read."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import AT_MOST_CITATIONS, NAME

NDOC_RE = re.compile(r"ndoc(\d+)")  # ALCE's result file names carry the number of documents in the prompt
CITED_RE = re.compile(r"\[(\d+)")  # ALCE reads a citation as '[' and digits (eval.py: re.findall(r"\[\d+", sent))


class AlceRecordError(ValueError):
    """A record that cannot be read as published (names the record and field)."""


@dataclass(frozen=True)
class AlceSentence:
    """One sentence as ALCE split it, what it cites and both verdicts on it."""

    text: str
    cited: tuple[int, ...]  # 1-based document numbers, at most AT_MOST_CITATIONS, in order
    human_support: int  # sentence_recall_score: 1 fully supported by its citations, 0 not
    human_citations: tuple[float, ...]  # citation_precision_score per citation: 2 full, 1 partial, 0 none
    auto_support: int  # ALCE's NLI verdict on the sentence and its citations joined
    auto_citations: tuple[int, ...]  # ALCE's per-citation verdict: 2 alone, 1 needed, 0 not needed


@dataclass(frozen=True)
class AlceResponse:
    """One published output: the citation instance it answers, the response text and its sentences."""

    dataset: str
    result_file: str
    qid: str
    question: str
    output: str
    documents: dict[int, dict[str, str]]  # citation number -> {title, text}
    sentences: tuple[AlceSentence, ...]

    @property
    def uid(self) -> str:
        """The instance uid: citation/alce-human/<dataset>/<result file>/<question id> (each result file cites its own
        documents for the same question)."""
        return f"{NAME}/alce-human/{self.dataset}/{self.result_file.removesuffix('.json')}/{self.qid}"

    def instance(self) -> dict[str, Any]:
        """The citation instance record (`gauntlet import` shape) with the cited documents under their numbers."""
        docs = [{"doc_id": f"{self.uid}-d{n}", "title": d["title"], "text": d["text"], "role": "supporting"}
                for n, d in sorted(self.documents.items())]
        return {"id": self.uid, "domain": "ALCE", "query": self.question, "protocol": NAME, "documents": docs}

    def ndoc(self) -> int:
        """How many documents the prompt numbered: the result file's `ndoc<N>`, else the highest number cited."""
        named = NDOC_RE.search(self.result_file)
        return max(int(named.group(1)) if named else 0, max(self.documents, default=0))

    def citation_docs(self) -> list[str]:
        """prompt_meta `citation_docs`: the document uid of each number 1..ndoc (uncited ones are not published)."""
        return [f"{self.uid}-d{n}" for n in range(1, self.ndoc() + 1)]


def _sentence(where: str, sent: dict[str, Any], auto_support: Any, auto_cits: Any) -> tuple[AlceSentence, list[int]]:
    numbers = [int(n) for n in CITED_RE.findall(sent["text"])][:AT_MOST_CITATIONS]
    citations = sent.get("citations") or []
    if len(citations) != len(numbers):
        raise AlceRecordError(f"{where}.citations: {len(citations)} documents for {len(numbers)} citations "
                              f"{numbers} in the sentence")
    if len(auto_cits) != len(numbers):
        raise AlceRecordError(f"{where}: automatic_citation_precision_scores has {len(auto_cits)} entries for "
                              f"{len(numbers)} citations")
    return AlceSentence(
        text=sent["text"], cited=tuple(numbers), human_support=int(sent["sentence_recall_score"]),
        human_citations=tuple(float(c["citation_precision_score"]) for c in citations),
        auto_support=int(auto_support), auto_citations=tuple(int(x) for x in auto_cits)), numbers


def read_record(dataset: str, result_file: str, qid: str, rec: dict[str, Any]) -> AlceResponse:
    """One published record as a response (AlceRecordError names the field that does not fit)."""
    where = f"{dataset}/{result_file}/{qid}"
    try:
        sents, autos, auto_cits = rec["sentences"], rec["automatic_recall_scores"], rec["automatic_citation_precision_scores"]
    except KeyError as exc:
        raise AlceRecordError(f"{where}: no field {exc.args[0]!r}") from None
    if not len(sents) == len(autos) == len(auto_cits):
        raise AlceRecordError(f"{where}: {len(sents)} sentences, {len(autos)} automatic_recall_scores, "
                              f"{len(auto_cits)} automatic_citation_precision_scores")
    documents: dict[int, dict[str, str]] = {}
    sentences = []
    for i, sent in enumerate(sents):
        sentence, numbers = _sentence(f"{where}.sentences[{i}]", sent, autos[i], auto_cits[i])
        for n, doc in zip(numbers, sent.get("citations") or [], strict=True):
            known = documents.setdefault(n, {"title": doc["title"], "text": doc["text"]})
            if known["text"] != doc["text"]:
                raise AlceRecordError(f"{where}.sentences[{i}]: document [{n}] differs from its earlier citation")
        sentences.append(sentence)
    return AlceResponse(dataset, result_file, qid, rec["question"], rec["output"], documents, tuple(sentences))


def read_alce_human_eval(path: Path) -> list[AlceResponse]:
    """Every record of ALCE's citation human-evaluation file, in file order (`overall_results` entries skipped)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return [read_record(dataset, result_file, qid, rec)
            for dataset, results in data.items() for result_file, records in results.items()
            for qid, rec in records.items() if qid != "overall_results"]
