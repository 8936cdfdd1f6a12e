"""FollowRAG (Dong et al. 2024): retrieved passages, a question with IFEval-style instructions, a gold answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.ingest.importers.base import Importer, Source, doc_id, placed
from core.ingest.importers.instructions import FOLLOWRAG_IDS, instruction_lists, rule_constraints
from core.store.schema import AnswerSpec, DocumentSpec, InstanceSpec


class Passage(Source):
    title: str
    content: str


class FollowRecord(Source):
    key: int | str
    type: str
    question_with_instrs: str
    answer_gold: str | list[str]  # a list: each element is a gold answer (any one is right)
    instruction_id_list: list[str]
    kwargs: list[dict[str, Any]]
    passages: list[Passage]


def _golds(answer: str | list[str]) -> list[str]:
    return [answer] if isinstance(answer, str) else answer


def _gold(answers: list[AnswerSpec]) -> str | list[str]:
    return answers[0].text if len(answers) == 1 else [a.text for a in answers]


class FollowRAG(Importer):
    name = "followrag"
    title = "FollowRAG"
    domain = "FollowRAG"
    Record = FollowRecord

    def build(self, record: FollowRecord, index: int, path: Path) -> dict[str, Any]:
        iid = f"followrag/{record.type}/{record.key}"
        constraints, unknown = rule_constraints(record.instruction_id_list, record.kwargs, FOLLOWRAG_IDS,
                                                keep_unknown=True)
        documents = [{"doc_id": doc_id(iid, f"passages[{i}]"), "title": p.title, "text": p.content, "role": "partial"}
                     for i, p in enumerate(record.passages) if p.content.strip()]
        return {
            "id": iid, "domain": self.domain, "query": record.question_with_instrs, "protocol": "reference_qa",
            "language": "en", "documents": documents,
            "constraints": constraints,
            "reference": {"answer_type": "short", "answers": [{"text": a} for a in _golds(record.answer_gold)]},
            "attributes": {"categories": [record.type]},
            "metadata": {"unchecked_instructions": unknown} if unknown else {},
        }

    def typed(self, spec: InstanceSpec) -> dict[str, Any]:
        assert spec.reference is not None, "this source's instances always carry a reference"
        def render(doc: DocumentSpec) -> dict[str, Any]:
            return {"title": doc.title, "content": doc.text}

        key = spec.id.rpartition("/")[2]
        return {
            "key": int(key) if key.isdigit() else key, "type": spec.attributes.categories[0],
            "question_with_instrs": spec.query, "answer_gold": _gold(spec.reference.answers),
            **instruction_lists(spec, FOLLOWRAG_IDS), "passages": placed(spec, "passages", render, hole={}),
        }
