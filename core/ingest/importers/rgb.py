"""RGB (Chen et al. 2024): en/zh plain, integration (_int) and counterfactual (_fact) files, one JSON per line; the
language is the one the file name says (en.json, zh_int.json ...), detected from the question only when it says
none, so the ids of the en and zh files never collide."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from core.ingest.importers.base import Importer, Source, doc_id, doc_index
from core.language import cjk_language
from core.store.schema import InstanceSpec

Aliases = Annotated[list[str], Field(min_length=1)]  # an answer and its other spellings


class RGBRecord(Source):
    id: int | str
    query: str
    answer: str | list[str | Aliases]
    positive: list[str] | list[list[str]]
    negative: list[str]
    fakeanswer: str | list[str] | None = None  # zh_fact.json line 14 gives two wrong answers as a list
    positive_wrong: list[str] | None = None


def file_language(path: Path) -> str | None:
    """The language RGB's file name says ('zh' for zh.json, zh_int.json, rgb_zh_refine.json ...; 'en' likewise),
    None when it says none."""
    parts = set(re.split(r"[_.\-]", Path(path).name.lower()))
    found = [language for language in ("zh", "en") if language in parts]
    return found[0] if len(found) == 1 else None


def _answer(item: str | list[str]) -> dict[str, Any]:
    return {"text": item} if isinstance(item, str) else {"text": item[0], "aliases": item[1:]}


def _documents(iid: str, field: str, texts: list, role: str, **extra: Any) -> list[dict[str, Any]]:
    docs = []
    for i, text in enumerate(texts):
        if isinstance(text, list):
            docs += _documents(iid, f"{field}[{i}]", text, role, **extra)
        elif text.strip():
            docs.append({"doc_id": doc_id(iid, f"{field}[{i}]"), "text": text, "role": role, **extra})
    return docs


def _nested(spec: InstanceSpec, field: str) -> list:
    """The texts of `field` back in their (possibly nested) source lists."""
    found = [(idx, d.text) for d in spec.documents if (idx := doc_index(d.doc_id, field))]
    if not any(len(idx) > 1 for idx, _ in found):
        return [text for _, text in found]
    groups: dict[int, list[str]] = {}
    for idx, text in found:
        groups.setdefault(idx[0], []).append(text)
    return [groups[g] for g in sorted(groups)]


class RGB(Importer):
    name = "rgb"
    title = "RGB (plain, _int, _fact)"
    domain = "RGB"
    Record = RGBRecord

    def build(self, record: RGBRecord, index: int, path: Path) -> dict[str, Any]:
        language = file_language(path) or ("zh" if cjk_language(record.query) else "en")
        kind = "_fact" if record.positive_wrong is not None else "_int" if any(
            isinstance(p, list) for p in record.positive) else ""
        iid = f"rgb/{language}{kind}/{record.id}"
        items = [record.answer] if isinstance(record.answer, str) else record.answer
        wrong = [record.fakeanswer] if isinstance(record.fakeanswer, str) else record.fakeanswer or []
        anti = {"kind": "anti_reference", "answer": wrong[0] if wrong else ""}
        return {
            "id": iid, "domain": self.domain, "query": record.query, "protocol": "reference_qa", "language": language,
            "documents": _documents(iid, "positive", record.positive, "supporting")
            + _documents(iid, "negative", record.negative, "noise")
            + _documents(iid, "positive_wrong", record.positive_wrong or [], "counterfactual", variant=anti),
            "reference": {"answer_type": "multi" if len(items) > 1 else "short",
                          "answers": [_answer(item) for item in items],
                          "wrong_answers": wrong},
        }

    def typed(self, spec: InstanceSpec) -> dict[str, Any]:
        assert spec.reference is not None, "this source's instances always carry a reference"
        answers = spec.reference.answers
        if any(a.aliases for a in answers):
            answer: Any = [[a.text, *a.aliases] for a in answers]
        else:
            answer = [a.text for a in answers] if spec.reference.answer_type == "multi" else answers[0].text
        tail = spec.id.rpartition("/")[2]
        typed = {"id": int(tail) if tail.isdigit() else tail, "query": spec.query, "answer": answer,
                 "positive": _nested(spec, "positive"), "negative": _nested(spec, "negative")}
        if wrong := spec.reference.wrong_answers:
            typed |= {"fakeanswer": wrong[0] if len(wrong) == 1 else wrong,
                      "positive_wrong": _nested(spec, "positive_wrong")}
        return typed
