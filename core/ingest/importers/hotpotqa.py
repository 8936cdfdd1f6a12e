"""HotpotQA, distractor setting, in the Hugging Face `hotpot_qa` layout or the authors' own (hotpot_dev_distractor_v1.json):
10 paragraphs, supporting-fact sentences."""

from __future__ import annotations

from itertools import accumulate, pairwise
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from core.ingest.importers.base import Importer, RecordError, Source, doc_id, placed
from core.store.schema import DocumentSpec, InstanceSpec


class Context(Source):
    title: list[str]
    sentences: list[list[str]]


class SupportingFacts(Source):
    title: list[str]
    sent_id: list[int]


class HotpotRecord(Source):
    id: str
    question: str
    answer: str | Annotated[list[str], Field(min_length=1)]  # a list: every element an accepted answer
    type: str
    level: str
    supporting_facts: SupportingFacts
    context: Context


def _problems(record: HotpotRecord) -> list[tuple[str, str]]:
    """Supporting facts and paragraphs that do not line up, by field."""
    context, facts = record.context, record.supporting_facts
    if len(context.sentences) != len(context.title):
        return [("context.sentences", f"{len(context.sentences)} paragraphs for {len(context.title)} titles")]
    if len(facts.sent_id) != len(facts.title):
        return [("supporting_facts.sent_id", f"{len(facts.sent_id)} sentence ids for {len(facts.title)} titles")]
    problems = []
    for i, (title, sent) in enumerate(zip(facts.title, facts.sent_id, strict=True)):
        if title not in context.title:
            problems.append((f"supporting_facts.title[{i}]", f"{title!r} is not a context title"))
        elif not 0 <= sent < len(context.sentences[context.title.index(title)]):
            problems.append((f"supporting_facts.sent_id[{i}]", f"{title!r} has no sentence {sent}"))
    return problems


AUTHORS_LAYOUT = "hotpot_json"  # metadata.layout of a record read in the authors' own layout


def is_authors_layout(raw: Any) -> bool:
    """Whether `raw` is laid out as the authors publish it (hotpot_dev_distractor_v1.json: `_id`, `context` as
    [title, sentences] pairs, `supporting_facts` as [title, sentence id] pairs) rather than as on Hugging Face."""
    def pairs(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value)

    return (isinstance(raw, dict) and "_id" in raw and "id" not in raw and pairs(raw.get("context"))
            and pairs(raw.get("supporting_facts", [])))


def from_authors(raw: dict[str, Any]) -> dict[str, Any]:
    """An authors'-layout record in the Hugging Face layout the importer reads (other fields kept as they are)."""
    rest = {k: v for k, v in raw.items() if k not in ("_id", "context", "supporting_facts")}
    facts, context = raw.get("supporting_facts", []), raw["context"]
    return {"id": raw["_id"], **rest,
            "supporting_facts": {"title": [t for t, _ in facts], "sent_id": [i for _, i in facts]},
            "context": {"title": [t for t, _ in context], "sentences": [s for _, s in context]}}


def to_authors(raw: dict[str, Any]) -> dict[str, Any]:
    """The inverse of from_authors: a Hugging Face-layout record back in the authors' layout."""
    rest = {k: v for k, v in raw.items() if k not in ("id", "context", "supporting_facts")}
    facts, context = raw["supporting_facts"], raw["context"]
    return {"_id": raw["id"], **rest,
            "supporting_facts": [[t, i] for t, i in zip(facts["title"], facts["sent_id"], strict=True)],
            "context": [[t, s] for t, s in zip(context["title"], context["sentences"], strict=True)]}


class HotpotQA(Importer):
    name = "hotpotqa"
    title = "HotpotQA (distractor)"
    domain = "HotpotQA"
    Record = HotpotRecord

    def payload(self, raw: Any, index: int, path: Path) -> dict[str, Any]:
        """Read the Hugging Face layout, or the authors' own (hotpot_dev_distractor_v1.json), remembering which."""
        if not is_authors_layout(raw):
            return super().payload(raw, index, path)
        payload = super().payload(from_authors(raw), index, path)
        return payload | {"metadata": {**payload["metadata"], "layout": AUTHORS_LAYOUT}}

    def source_record(self, spec: InstanceSpec) -> Any:
        """The record as read, in the layout it came in."""
        raw = super().source_record(spec)
        return to_authors(raw) if spec.metadata.get("layout") == AUTHORS_LAYOUT else raw

    def build(self, record: HotpotRecord, index: int, path: Path) -> dict[str, Any]:
        if problems := _problems(record):
            raise RecordError(*problems)
        iid = f"hotpotqa/{record.id}"
        support: dict[str, list[int]] = {}
        for title, sent in zip(record.supporting_facts.title, record.supporting_facts.sent_id, strict=True):
            support.setdefault(title, []).append(sent)
        documents = []
        for i, (title, sentences) in enumerate(zip(record.context.title, record.context.sentences, strict=True)):
            variant: dict[str, Any] = {"sentence_offsets": [0, *accumulate(map(len, sentences[:-1]))]}
            if title in support:
                variant["supporting_sentences"] = sorted(support[title])
            documents.append({"doc_id": doc_id(iid, f"context[{i}]"), "title": title, "text": "".join(sentences),
                              "role": "supporting" if title in support else "noise", "variant": variant})
        first, *more = [record.answer] if isinstance(record.answer, str) else record.answer
        boolean = not more and first.strip().lower() in ("yes", "no")
        return {
            "id": iid, "domain": self.domain, "query": record.question, "protocol": "reference_qa", "language": "en",
            "documents": documents,
            "reference": {"answer_type": "boolean" if boolean else "short", "answers": [{"text": first, "aliases": more}]},
            "attributes": {"question_type": record.type, "categories": [record.level]},
        }

    def typed(self, spec: InstanceSpec) -> dict[str, Any]:
        assert spec.reference is not None, "this source's instances always carry a reference"
        def sentences(doc: DocumentSpec) -> list[str]:
            cuts = [*doc.variant["sentence_offsets"], len(doc.text)]
            return [doc.text[a:b] for a, b in pairwise(cuts)]

        facts = [(d.title, s) for d in spec.documents for s in d.variant.get("supporting_sentences", [])]
        gold = spec.reference.answers[0]
        return {
            "id": spec.id.removeprefix("hotpotqa/"), "question": spec.query,
            "answer": [gold.text, *gold.aliases] if gold.aliases else gold.text,
            "type": spec.attributes.question_type, "level": spec.attributes.categories[0],
            "supporting_facts": {"title": [t for t, _ in facts], "sent_id": [s for _, s in facts]},
            "context": {"title": placed(spec, "context", lambda d: d.title),
                        "sentences": placed(spec, "context", sentences)},
        }
