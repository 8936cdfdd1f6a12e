"""EnterpriseRAG conflicts and gaps where the rules run out: a generator model edits one fact (conflict) or removes
the answer in meaning (gap), and every conflict and gap, rule-made or generated, passes automatic checks.

Checks (each a verdict with its reason and who decided, stored on the instance under metadata.checks):
- states_wrong (conflict): the edited document states the edited fact;
- drops_gold (conflict, gap): the edited document no longer states the gold fact;
- gold_not_elsewhere (conflict: in the edited document; gap: in any document of the bundle);
- same_type (conflict): the edited fact is the same kind of thing as the gold one;
- contradicts (conflict): the two facts cannot both be true;
- no_answer (gap): no document of the bundle still answers the question.
Rules decide where they suffice (answer strings, a rule's own edit kind); the configured judge decides meaning (a
generated edit's type and contradiction, whether a gap bundle still answers). With no judge, a generated edit's
meaning checks fail with that reason, and a gap's no_answer rests on the answer strings (its reason says so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.protocols.misleading_evidence.builder_generative import Verdict, rule_type
from core.scoring.reference import contains, normalize

CompleteJson = Callable[[str], dict]
CONFLICT_CHECKS = ("states_wrong", "drops_gold", "gold_not_elsewhere", "same_type", "contradicts")
GAP_CHECKS = ("drops_gold", "gold_not_elsewhere", "no_answer")
MAX_ATTEMPTS = 2  # a generated edit that fails a check is written once more, told which checks failed and why
RULE_KINDS = ("date", "time", "number", "status", "name")  # simulate.EDITS: a value swapped in the same place

CONFLICT_PROMPT = """You make one test item for a retrieval-augmented question-answering benchmark: a second version
of a document that contradicts the original on the fact that answers the question.

Question: {question}
Known answer facts: {facts}

Document:
{text}

Copy the exact span of the document that states the answer, and give a replacement of the same kind (a date for a
date, an amount for an amount, a name for a name, a rule for a rule) that makes the statement false. Every mention of
the span will be replaced.
{feedback}
Reply with JSON only: {{"original": "<exact span>", "edited": "<replacement>", "fact_type": "..."}}"""

GAP_PROMPT = """You make one test item for a retrieval-augmented question-answering benchmark: a version of a
document that no longer answers the question, on the same topic.

Question: {question}
Known answer facts: {facts}

Document:
{text}

Rewrite the document so that no reader could answer the question from it: remove the answer and anything from which it
could be worked out, and do not state a different answer. Keep every unrelated sentence as it is.
{feedback}
Reply with JSON only: {{"text": "<the rewritten document>"}}"""

CONFLICT_JUDGE_PROMPT = """You check one conflict item of a retrieval-augmented question-answering benchmark.

Question: {question}
Original statement: {original}
Edited statement: {edited}

Answer two things. "contradicts": can the two statements not both be true, as answers to the question? "same_type":
is "{new}" the same kind of thing as "{old}" (a date for a date, an amount for an amount, a person for a person)?
Reply with JSON only: {{"contradicts": true|false, "same_type": true|false, "reason": "..."}}"""

GAP_JUDGE_PROMPT = """You check one knowledge-gap item of a retrieval-augmented question-answering benchmark: none of
its documents may answer the question.

Question: {question}

Documents:
{documents}

Does any document answer the question, fully or in part, directly or by an obvious inference? List those documents.
Reply with JSON only: {{"answers": true|false, "documents": [<numbers>], "reason": "..."}}"""


@dataclass
class Assist:
    """The models a build may use where the rules run out: the generator writes edits, the judge checks meaning."""

    generate: CompleteJson | None = None
    judge: CompleteJson | None = None
    judge_name: str = "judge"
    generate_name: str = ""  # the generator's model name, recorded on every edit it writes


@dataclass
class CheckCounts:
    """Per check, how many verdicts passed and failed and who decided; items generated, regenerated and dropped."""

    checks: dict[str, dict[str, int]] = field(default_factory=dict)
    generated: int = 0
    regenerated: int = 0
    dropped: list[str] = field(default_factory=list)

    def add(self, verdicts: dict[str, Any]) -> None:
        """Count one item's stored verdicts."""
        for name, v in verdicts.items():
            row = self.checks.setdefault(name, {"passed": 0, "failed": 0, "by_rule": 0, "by_judge": 0})
            row["passed" if v["passed"] else "failed"] += 1
            row["by_rule" if v["by"] == "rule" else "by_judge"] += 1


class CheckFailed(ValueError):
    """An item whose every attempt failed a check: dropped, with its last verdicts."""

    def __init__(self, message: str, verdicts: dict[str, Verdict], attempts: int = 1) -> None:
        super().__init__(message)
        self.verdicts = verdicts
        self.attempts = attempts


def said(text: str, phrase: str) -> bool:
    """Whether `phrase` is stated in `text` (word-normalised, whole words)."""
    return bool(phrase.strip()) and contains(normalize(text, "word"), normalize(phrase, "word"), "word")


def sentence_with(text: str, phrase: str) -> str:
    """The sentence of `text` that holds `phrase` (the whole text when none does)."""
    for part in text.replace("\n", " ").split(". "):
        if phrase in part:
            return part.strip()
    return text[:400]


def _ask(judge: CompleteJson | None, prompt: str) -> dict[str, Any]:
    if judge is None:
        return {}
    from core.generation.runner import BudgetReached

    try:
        return judge(prompt) or {}
    except BudgetReached:
        raise  # the build stops: a call past its budget is not sent
    except Exception as exc:  # noqa: BLE001 - a failed judge call fails the checks it was asked for
        return {"reason": f"judge call failed: {type(exc).__name__}"}


def _judged(reply: dict[str, Any], key: str, name: str, expect: bool = True) -> Verdict:
    if not reply:
        return Verdict(False, "rules cannot tell and no judge is configured", "rule")
    return Verdict(reply.get(key) is expect, str(reply.get("reason", ""))[:300] or "no reason given", f"judge:{name}")


def check_conflict(question: str, gold: list[str], original_text: str, edited_text: str, original: str, edited: str,
                   kind: str, assist: Assist | None = None) -> dict[str, Verdict]:
    """Every conflict check on one edited document (`kind` is the rule's edit kind, or 'generated')."""
    touched = [f for f in gold if original in f or f in original] if gold else [original]
    still = said(edited_text, original)
    out = {"states_wrong": Verdict(said(edited_text, edited), f"'{edited}' {'is' if said(edited_text, edited) else 'is not'} "
                                   "stated in the edited document", "rule"),
           "drops_gold": Verdict(bool(touched) and not still,
                                 f"the edit changes '{original}', which is part of no answer fact" if not touched else
                                 f"the edited document {'still states' if still else 'no longer states'} '{original}'",
                                 "rule")}
    left = [f for f in touched if said(edited_text, f)]
    out["gold_not_elsewhere"] = Verdict(not left, f"the edited gold is still stated in the edited document: "
                                        f"{', '.join(left)}" if left else "the edited gold is stated nowhere else in "
                                        "the edited document", "rule")
    ruled = kind in RULE_KINDS
    typed = rule_type(original, edited, kind if ruled else "")
    reply: dict[str, Any] = {}
    if typed is None or not ruled:
        reply = _ask(assist.judge if assist else None, CONFLICT_JUDGE_PROMPT.format(
            question=question, original=sentence_with(original_text, original),
            edited=sentence_with(edited_text, edited), old=original, new=edited))
    out["same_type"] = typed if typed is not None else _judged(reply, "same_type", assist.judge_name if assist else "")
    if ruled:
        differ = normalize(original, "word") != normalize(edited, "word")
        out["contradicts"] = Verdict(differ, f"the same statement with a different {kind} in the same place"
                                     if differ else "the edit left the value as it was", "rule")
    else:
        out["contradicts"] = _judged(reply, "contradicts", assist.judge_name if assist else "")
    return out


def check_gap(question: str, gold: list[str], texts: list[str], edited: tuple[str, str] | None = None,
              assist: Assist | None = None) -> tuple[dict[str, Verdict], list[int]]:
    """Every gap check on one bundle (`edited`: the (original, rewritten) document when one was rewritten); the
    0-based documents the judge says still answer."""
    out: dict[str, Verdict] = {}
    if edited is not None:
        left = [f for f in gold if said(edited[1], f)]
        out["drops_gold"] = Verdict(not left and edited[0] != edited[1], "the rewritten document still states "
                                    + ", ".join(left) if left else "the rewritten document states no gold fact"
                                    if edited[0] != edited[1] else "the document was not changed", "rule")
    stated = [i for i, text in enumerate(texts) if any(said(text, f) for f in gold)]
    out["gold_not_elsewhere"] = Verdict(not stated, f"gold stated in documents {[i + 1 for i in stated]}" if stated
                                        else f"no document states {', '.join(gold) or 'the answer'}" if gold
                                        else "no answer facts recorded: nothing to look for", "rule")
    judge = assist.judge if assist else None
    if judge is None:
        out["no_answer"] = Verdict(not stated, f"answer strings found in documents {[i + 1 for i in stated]}"
                                   if stated else "answer strings absent from every document, documents close to the "
                                   "removed ones by BM25 dropped (rule; no judge configured to read meaning)", "rule")
        return out, stated
    numbered = "\n\n".join(f"[{i + 1}] {text}" for i, text in enumerate(texts))
    reply = _ask(judge, GAP_JUDGE_PROMPT.format(question=question, documents=numbered))
    answering = sorted({int(n) - 1 for n in reply.get("documents") or [] if str(n).isdigit()
                        and 0 < int(n) <= len(texts)} | set(stated))
    out["no_answer"] = _judged(reply, "answers", assist.judge_name if assist else "", expect=False)
    return out, answering


def generate_conflict(question: str, gold: list[str], text: str, generate: CompleteJson,
                      feedback: str = "") -> tuple[str, str, str, str]:
    """(edited text, original span, replacement, fact type) from the generator; ValueError says why not usable."""
    reply = generate(CONFLICT_PROMPT.format(question=question, facts="; ".join(gold) or "(none recorded)", text=text,
                                            feedback=f"\nA previous attempt failed these checks: {feedback}\n"
                                            if feedback else "")) or {}
    original, edited = str(reply.get("original", "")).strip(), str(reply.get("edited", "")).strip()
    if not original or not edited or original not in text:
        raise ValueError(f"the generator's span {original!r} is not in the document")
    return text.replace(original, edited), original, edited, str(reply.get("fact_type", "")).strip()[:40]


def generate_gap(question: str, gold: list[str], text: str, generate: CompleteJson, feedback: str = "") -> str:
    """The document rewritten by the generator so that it no longer answers; ValueError when the reply is empty."""
    reply = generate(GAP_PROMPT.format(question=question, facts="; ".join(gold) or "(none recorded)", text=text,
                                       feedback=f"\nA previous attempt failed these checks: {feedback}\n"
                                       if feedback else "")) or {}
    rewritten = " ".join(str(reply.get("text", "")).split())
    if not rewritten:
        raise ValueError("the generator returned no rewritten document")
    return rewritten


def failures(verdicts: dict[str, Verdict]) -> str:
    """The failed checks with their reasons ('' when all passed)."""
    return "; ".join(f"{name}: {v.reason}" for name, v in verdicts.items() if not v.passed)


def stored(verdicts: dict[str, Verdict]) -> dict[str, Any]:
    """The verdicts as stored on the instance."""
    return {name: v.to_dict() for name, v in verdicts.items()}
