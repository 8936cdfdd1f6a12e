"""A conversation turn as an instance, whatever its source (MTRAG-UN tasks, the team's conversations, production
traces): its reference from its answerability, its passages with the role that answerability gives them."""

from __future__ import annotations

from typing import Any

from . import NAME

ROLE_OF = {"ANSWERABLE": "supporting", "PARTIAL": "partial", "UNDERSPECIFIED": "supporting", "UNANSWERABLE": "noise"}


def reference_for(label: str, target: str) -> dict[str, Any] | None:
    """The turn's reference: the target answer, or unanswerable (the target kept as reasoning); none for a turn that
    has an answer but no reference text (a production turn before an expert writes one)."""
    if label == "UNANSWERABLE":
        return {"answer_type": "unanswerable", **({"reasoning": target} if target.strip() else {})}
    return {"answer_type": "long", "answers": [{"text": target}]} if target.strip() else None


def turn_instance(uid: str, domain: str, query: str, history: list[dict[str, str]], documents: list[dict[str, Any]],
                  label: str, turn: int, question_type: str, multi_turn: list[str], target: str,
                  extra: list[str], language: str | None = None) -> dict[str, Any]:
    """One turn as an instance (its language as the source states it; else detected on import)."""
    docs = [{"doc_id": d["doc_id"], "title": d.get("title", ""), "text": d["text"], "role": ROLE_OF[label]}
            for d in documents if d.get("text", "").strip()]
    reference = reference_for(label, target)
    return {"id": uid, "domain": domain, "query": query, "protocol": NAME, "documents": docs,
            **({"reference": reference} if reference else {}), **({"language": language} if language else {}),
            "attributes": {"question_type": question_type, "categories": [label, *multi_turn], "history": history,
                           "aspects": [f"turn:{turn}", *(f"multi_turn:{m}" for m in multi_turn), *extra]}}
