"""RAMDocs (Wang et al. 2025): ambiguity, misinformation and noise; every gold answer needed, no wrong one."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from core.ingest.importers.base import Importer, Source, doc_id, placed
from core.scoring.reference import squad_normalize
from core.store.schema import DocumentSpec, InstanceSpec

ROLE_OF = {"correct": "supporting", "misinfo": "counterfactual", "noise": "noise"}
TYPE_OF = {role: kind for kind, role in ROLE_OF.items()}


def overlaps(wrong: str, gold: str) -> bool:
    """Whether `wrong` is contained in `gold`, both SQuAD-normalised, as RAMDocs' published check compares them."""
    needle = squad_normalize(wrong)
    return bool(needle) and needle in squad_normalize(gold)


class RamDoc(Source):
    text: str
    type: Literal["correct", "misinfo", "noise"]
    answer: str | list[str]  # a list: every answer the document supports, each kept


class RamRecord(Source):
    question: str
    documents: list[RamDoc]
    gold_answers: list[str] = Field(min_length=1)
    wrong_answers: list[str]


class RAMDocs(Importer):
    name = "ramdocs"
    title = "RAMDocs"
    domain = "RAMDocs"
    Record = RamRecord

    def build(self, record: RamRecord, index: int, path: Path) -> dict[str, Any]:
        iid = f"ramdocs/{index}"
        documents = [
            {"doc_id": doc_id(iid, f"documents[{i}]"), "text": d.text, "role": ROLE_OF[d.type],
             "variant": {"answer": d.answer} | ({"kind": "misinfo"} if d.type == "misinfo" else {})}
            for i, d in enumerate(record.documents) if d.text.strip()
        ]
        return {
            "id": iid, "domain": self.domain, "query": record.question, "protocol": "reference_qa", "language": "en",
            "documents": documents,
            "reference": {"answer_type": "multi" if len(record.gold_answers) > 1 else "short",
                          "answers": [{"text": a} for a in record.gold_answers],
                          "wrong_answers": record.wrong_answers},
        }

    def record_warnings(self, spec: InstanceSpec) -> list[tuple[str, str]]:
        """A wrong answer that is part of a gold answer: the published rule (substring of the normalised response)
        then scores every response that gives all gold answers 0."""
        assert spec.reference is not None, "this source's instances always carry a reference"
        gold = [a.text for a in spec.reference.answers]
        return [("wrong_answers", f"wrong answer {w!r} is part of gold answer {g!r}: under RAMDocs' published rule "
                 "every response that gives all gold answers scores 0 here")
                for w in spec.reference.wrong_answers for g in gold if overlaps(w, g)][:1]

    def typed(self, spec: InstanceSpec) -> dict[str, Any]:
        assert spec.reference is not None, "this source's instances always carry a reference"
        def render(doc: DocumentSpec) -> dict[str, Any]:
            return {"text": doc.text, "type": TYPE_OF[doc.role], "answer": doc.variant["answer"]}

        return {"question": spec.query, "documents": placed(spec, "documents", render, hole={}),
                "gold_answers": [a.text for a in spec.reference.answers],
                "wrong_answers": spec.reference.wrong_answers}
