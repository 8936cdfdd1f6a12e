"""DomainRAG (Chinese college admissions): extractive, conversational, structural, faithful, time-sensitive,
multi-doc and noisy QA. Passages are whitespace word-segmented Chinese, kept exactly as released."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from core.ingest.importers.base import Importer, Raw, Source, doc_id, placed, validated
from core.store.schema import AnswerSpec, DocumentSpec, InstanceSpec

JOIN = "；"  # joins the parts of a composite answer into its display text


class Passage(Source):
    contents: str
    title: str | None = None
    url: str | None = None


class Turn(Source):
    question: str
    answers: list[str]


class Extractive(Source):
    question: str
    positive_reference: list[Passage]
    answers: list[list[str]]


class Conversational(Source):
    question: str
    history_qa: list[Turn]
    answers: list[str]
    positive_reference: Passage


class Structural(Source):
    question: str
    answers: list[list[str]]
    url: str
    positive_html: str
    positive_reference: Passage


class Faithful(Source):
    question: str
    answers: list[list[str]]
    counterfact_answers: list[list[str]] = Field(min_length=1)
    positive_reference: Passage
    counterfact_reference: Passage


class TimeSensitive(Extractive):
    date: str


class MultiDoc(Source):
    question: str
    answer: str | list[str]
    positive_references: list[Passage]
    referred_docs: list[Passage]


class Noisy(Source):
    question: str
    answers: list[str]
    positive_reference: list[Passage]
    noisy_reference: list[Passage]


SUBSETS: dict[str, type[Source]] = {
    "conversational": Conversational, "structural": Structural, "faithful": Faithful, "multidoc": MultiDoc,
    "noisy": Noisy, "time_sensitive": TimeSensitive, "extractive": Extractive,
}
MARKERS = {"history_qa": "conversational", "positive_html": "structural", "counterfact_reference": "faithful",
           "referred_docs": "multidoc", "noisy_reference": "noisy", "date": "time_sensitive"}
LONG_FORM = ("conversational", "multidoc")


def subset_of(raw: dict[str, Any]) -> str:
    """Which DomainRAG sub-set a record belongs to, told by the fields only that sub-set has."""
    return next((subset for marker, subset in MARKERS.items() if marker in raw), "extractive")


def composite(parts: list[str]) -> dict[str, Any]:
    """An alternative made of parts (all needed, any order)."""
    return {"text": JOIN.join(parts), "parts": parts}


def _passage(iid: str, path: str, passage: Passage, role: str, **extra: Any) -> dict[str, Any]:
    return {"doc_id": doc_id(iid, path), "title": passage.title or "", "text": passage.contents,
            "source": passage.url or "", "role": role, **extra}


def _passages(iid: str, field: str, passages: list[Passage], role: str, **extra: Any) -> list[dict[str, Any]]:
    return [_passage(iid, f"{field}[{i}]", p, role, **extra) for i, p in enumerate(passages) if p.contents.strip()]


def _rendered(doc: DocumentSpec) -> dict[str, Any]:
    out = {"title": doc.title, "contents": doc.text}
    return out | ({"url": doc.source} if doc.source else {})


def _parts(answer: AnswerSpec) -> list[str]:
    return answer.parts or [answer.text]


def _documents(record: Any, subset: str, iid: str) -> list[dict[str, Any]]:
    if subset in ("extractive", "time_sensitive"):
        return _passages(iid, "positive_reference", record.positive_reference, "supporting")
    if subset == "conversational":
        return [_passage(iid, "positive_reference", record.positive_reference, "supporting")]
    if subset == "structural":
        html = Passage(contents=record.positive_html, title=record.positive_reference.title, url=record.url)
        return [_passage(iid, "positive_html", html, "supporting", content_type="html"),
                _passage(iid, "positive_reference", record.positive_reference, "supporting") | {"source": record.url}]
    if subset == "faithful":
        anti = {"kind": "anti_reference", "answer": JOIN.join(record.counterfact_answers[0])}
        return [_passage(iid, "positive_reference", record.positive_reference, "supporting"),
                _passage(iid, "counterfact_reference", record.counterfact_reference, "counterfactual", variant=anti)]
    if subset == "multidoc":
        return _passages(iid, "positive_references", record.positive_references, "supporting") + _passages(
            iid, "referred_docs", record.referred_docs, "supporting", variant={"kind": "full_page"})
    return _passages(iid, "positive_reference", record.positive_reference, "supporting") + _passages(
        iid, "noisy_reference", record.noisy_reference, "noise")


def _answers(record: Any, subset: str) -> list[dict[str, Any]]:
    if subset == "conversational":
        return [{"text": a} for a in record.answers]
    if subset == "multidoc":
        return [{"text": record.answer}] if isinstance(record.answer, str) else [composite(record.answer)]
    if subset == "noisy":
        return [composite(record.answers)]
    return [composite(parts) for parts in record.answers]


class DomainRAG(Importer):
    name = "domainrag"
    title = "DomainRAG (extractive, conversational, structural, faithful, time-sensitive, multi-doc, noisy)"
    domain = "DomainRAG"

    def record(self, raw: Raw) -> BaseModel:
        return validated(SUBSETS[subset_of(raw)] if isinstance(raw, dict) else Source, raw)

    def build(self, record: Any, index: int, path: Path) -> dict[str, Any]:
        subset = next(name for name, model in SUBSETS.items() if type(record) is model)
        iid = f"domainrag/{subset}/{index}"
        reference: dict[str, Any] = {"answer_type": "long" if subset in LONG_FORM else "short",
                                     "answers": _answers(record, subset)}
        attributes: dict[str, Any] = {"question_type": subset}
        if subset == "faithful":
            reference["wrong_answers"] = [JOIN.join(parts) for parts in record.counterfact_answers]
        if subset == "time_sensitive":
            attributes["date"] = record.date
        if subset == "conversational":
            attributes["history"] = [turn for t in record.history_qa for turn in (
                {"role": "user", "content": t.question}, {"role": "assistant", "content": "\n".join(t.answers)})]
        return {
            "id": iid, "domain": self.domain, "query": record.question, "protocol": "reference_qa", "language": "zh",
            "documents": _documents(record, subset, iid), "reference": reference, "attributes": attributes,
            "metadata": {"segmentation": "whitespace"},
        }

    def typed(self, spec: InstanceSpec) -> dict[str, Any]:
        assert spec.reference is not None, "this source's instances always carry a reference"
        subset = spec.attributes.question_type
        answers = spec.reference.answers
        typed: dict[str, Any] = {"question": spec.query}
        if subset == "conversational":
            typed["answers"] = [a.text for a in answers]
            history = spec.attributes.history
            typed["history_qa"] = [{"question": q.content, "answers": a.content.split("\n")}
                                   for q, a in zip(history[::2], history[1::2], strict=True)]
        elif subset == "multidoc":
            typed["answer"] = answers[0].parts or answers[0].text
        elif subset == "noisy":
            typed["answers"] = _parts(answers[0])
        else:
            typed["answers"] = [_parts(a) for a in answers]
        if subset == "faithful":
            typed["counterfact_answers"] = [w.split(JOIN) for w in spec.reference.wrong_answers]
        if subset == "time_sensitive":
            typed["date"] = spec.attributes.date
        return typed | self._typed_documents(spec, subset)

    def _typed_documents(self, spec: InstanceSpec, subset: str | None) -> dict[str, Any]:
        docs = {d.doc_id.partition("#")[2]: d for d in spec.documents}
        if subset in ("conversational", "faithful"):
            fields = ("positive_reference", "counterfact_reference") if subset == "faithful" else ("positive_reference",)
            return {f: _rendered(docs[f]) for f in fields}
        if subset == "structural":
            text = docs["positive_reference"]
            return {"url": text.source, "positive_html": docs["positive_html"].text,
                    "positive_reference": {"title": text.title, "contents": text.text}}
        placed_fields = {"multidoc": ("positive_references", "referred_docs"), "noisy": ("positive_reference",
                                                                                         "noisy_reference")}
        return {f: placed(spec, f, _rendered, hole={}) for f in placed_fields.get(subset or "", ("positive_reference",))}
