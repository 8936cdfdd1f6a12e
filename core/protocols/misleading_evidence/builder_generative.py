"""Misleading evidence where the rules run out: a generator model writes the edit for every item the rules skip or
that fails a check, and every item, rule-made or generated, passes automatic checks before it is built.

Checks (each a verdict with its reason and who decided, stored on the item):
- states_wrong: the edited evidence states the designated wrong answer;
- drops_gold: the edited sentence(s) no longer state the gold answer;
- gold_not_elsewhere: the gold answer is stated nowhere in the edited evidence;
- same_type: the wrong answer is the same kind of thing as the gold.
Rules decide where they suffice (answer strings, figures, years, yes/no); the configured judge decides the rest (a
yes/no edit's meaning, the type of two names); with no judge those checks fail with that reason, so nothing unchecked
is built.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from core.generation.runner import BudgetReached
from core.language import wordlists
from core.protocols.misleading_evidence.builder import (
    CompleteJson,
    Edit,
    Evidence,
    NoSafeEdit,
    Plan,
    one_span_diff,
    paragraphs,
)
from core.scoring.reference import contains, normalize
from core.store.schema import InstanceSpec

CHECKS = ("states_wrong", "drops_gold", "gold_not_elsewhere", "same_type")
_FIGURE = re.compile(r"^[\d.,\s%$€£]+(?:\s*\w+)?$")
_YEAR = re.compile(r"^(?:1[0-9]{3}|20[0-9]{2})$")

GENERATE_PROMPT = """You build a misleading-evidence test item for a question-answering benchmark.

Question: {question}
Correct answer: {gold}

Evidence, one sentence per line, numbered:
{numbered}

Pick a wrong answer of the same kind as the correct one (a person for a person, a year for a year, a place for a
place; for a yes/no question, the opposite word). Then rewrite only the sentences needed so that the evidence states
the wrong answer as the answer to the question and no longer states or implies the correct answer anywhere. Keep
every other sentence as it is and keep the style.
{feedback}
Reply with JSON only: {{"wrong_answer": "...", "answer_type": "...", "sentences": {{"<number>": "<rewritten sentence>"}}}}"""

JUDGE_PROMPT = """You check one item of a misleading-evidence benchmark.

Question: {question}
Correct answer: {gold}
Designated wrong answer: {wrong}
Edited evidence:
{evidence}

Answer two things. "supports_wrong": does the edited evidence, read alone, answer the question with the wrong answer
(and not with the correct one)? "same_type": is the wrong answer the same kind of thing as the correct answer (a
person for a person, a place for a place, a year for a year, yes/no for yes/no)?
Reply with JSON only: {{"supports_wrong": true|false, "same_type": true|false, "reason": "..."}}"""


@dataclass(frozen=True)
class Verdict:
    """One check's outcome on one item."""

    passed: bool
    reason: str
    by: str  # "rule" or "judge:<name>"

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the item's metadata."""
        return {"passed": self.passed, "reason": self.reason, "by": self.by}


def _is_yes_no(text: str) -> bool:
    return text.strip().lower() in ("yes", "no")


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'-]+", text.lower())


def yes_no_question(question: str, language: str = "en") -> bool:
    """Whether `question` asks for yes or no (it opens with an auxiliary verb of data/wordlists/yes_no.<lang>.json)."""
    words = _words(question)
    return bool(words) and words[0] in wordlists("yes_no", language)["openers"]


def _asked(span: str, question: str, language: str = "en") -> bool:
    """Whether every content word of `span` is a word of the question (a plural or longer form counts)."""
    articles = wordlists("yes_no", language)["articles"]
    asked, words = _words(question), [w for w in _words(span) if w not in articles]
    return bool(words) and all(any(t.startswith(w) or (len(t) >= 4 and w.startswith(t)) for t in asked) for w in words)


def rule_flip(question: str, gold: str, wrong: str, edit: Edit, clean: str, language: str = "en") -> Verdict | None:
    """Whether a yes/no edit flips the answer, by rule where it can tell: the wrong answer is the opposite word, and
    the edit removes (yes) or supplies (no) the property the question asks about, moves a figure an order question
    compares, or changes a property a 'same' question asks two entities to share; None when the rules cannot tell."""
    g, w = gold.strip().lower(), wrong.strip().lower()
    if {g, w} != {"yes", "no"}:
        return Verdict(False, f"'{wrong}' is not the opposite of '{gold}'", "rule")
    if edit.before == edit.after:
        return Verdict(False, "the edit changed nothing", "rule")
    lists, asked = wordlists("yes_no", language), " ".join(_words(question))
    changed = edit.before if g == "yes" else edit.after
    if _asked(changed, question, language):
        return Verdict(True, f"the edit {'removes' if g == 'yes' else 'supplies'} '{changed.strip()}', which the "
                       "question asks about", "rule")
    if any(o in _words(question) for o in lists["order_words"]) and re.search(r"\d", edit.before + edit.after):
        return Verdict(True, "the edit moves a figure the order question compares", "rule")
    if g == "yes" and any(f" {p} " in f" {asked} " for p in lists["same_words"]) and clean.count(edit.before.strip()) >= 2:
        return Verdict(True, f"the edit changes '{edit.before.strip()}', which the question asks both to share", "rule")
    return None


def _said(text: str, answer: str) -> bool:
    return contains(normalize(text, "word"), normalize(answer, "word"), "word")


def rule_type(gold: str, wrong: str, entity_type: str = "") -> Verdict | None:
    """The same-type check by rule where it can tell: yes/no pairs, years, figures, or the rule's own entity type."""
    g, w = gold.strip(), wrong.strip()
    if _is_yes_no(g) or _is_yes_no(w):
        return Verdict(_is_yes_no(g) and _is_yes_no(w) and g.lower() != w.lower(), "yes/no against yes/no", "rule")
    if _YEAR.match(g) or _YEAR.match(w):
        return Verdict(bool(_YEAR.match(g) and _YEAR.match(w)), "year against year", "rule")
    if _FIGURE.match(g) and any(c.isdigit() for c in g):
        return Verdict(bool(_FIGURE.match(w)) and any(c.isdigit() for c in w), "figure against figure", "rule")
    if entity_type:
        return Verdict(True, f"the rule chose a wrong answer of the gold's type ({entity_type})", "rule")
    return None


def check_plan(spec: InstanceSpec, plan: Plan, judge: CompleteJson | None = None, judge_name: str = "judge",
               generated: bool = False) -> dict[str, Verdict]:
    """Every check's verdict on one planned item (rules first, the judge where they cannot tell)."""
    assert spec.reference is not None
    gold, wrong = spec.reference.answers[0].text.strip(), plan.wrong_answer
    misleading = plan.misleading
    text, edited = misleading.text(), misleading.sentences[misleading.answer]
    out: dict[str, Verdict] = {}
    yes_no = _is_yes_no(gold)
    asked: dict[str, Any] | None = None

    def ask() -> dict[str, Any]:
        nonlocal asked
        if asked is None:
            try:
                asked = judge(JUDGE_PROMPT.format(question=spec.query, gold=gold, wrong=wrong, evidence=text)) or {} \
                    if judge else {}
            except BudgetReached:
                raise  # the build stops: a call past its budget is not sent
            except Exception as exc:  # noqa: BLE001 - a failed judge call fails the checks it was asked for
                asked = {"reason": f"judge call failed: {type(exc).__name__}"}
        return asked

    def by_judge(key: str) -> Verdict:
        if judge is None:
            return Verdict(False, "rules cannot tell and no judge is configured", "rule")
        reply = ask()
        return Verdict(reply.get(key) is True, str(reply.get("reason", ""))[:300] or "no reason given",
                       f"judge:{judge_name}")

    if yes_no:
        out["states_wrong"] = by_judge("supports_wrong")
        flip = rule_flip(spec.query, gold, wrong, plan.edit, plan.evidence.text())
        out["drops_gold"] = flip if flip is not None else out["states_wrong"]
        out["gold_not_elsewhere"] = Verdict(True, "a yes/no gold is not a span of the evidence", "rule")
    else:
        out["states_wrong"] = Verdict(_said(text, wrong), f"'{wrong}' {'is' if _said(text, wrong) else 'is not'} "
                                      "stated in the edited evidence", "rule")
        out["drops_gold"] = Verdict(not _said(edited, gold), f"the edited sentence {'still states' if _said(edited, gold) else 'no longer states'} '{gold}'", "rule")
        left = sum(1 for s in misleading.sentences if _said(s, gold))
        out["gold_not_elsewhere"] = Verdict(left == 0, f"'{gold}' stated in {left} sentences of the edited evidence",
                                            "rule")
    typed = rule_type(gold, wrong, "" if generated else plan.entity_type)
    if yes_no and not yes_no_question(spec.query):
        typed = Verdict(False, "a yes/no answer to a question that is not a yes/no question", "rule")
    out["same_type"] = typed if typed is not None else by_judge("same_type")
    return out


def yes_no_gate(spec: InstanceSpec, plan: Plan) -> dict[str, Verdict]:
    """The rule checks every yes/no edit passes, checked or not: the question is a yes/no question, and the edit
    flips its answer (the rules must be able to tell)."""
    assert spec.reference is not None
    gold = spec.reference.answers[0].text.strip()
    flip = rule_flip(spec.query, gold, plan.wrong_answer, plan.edit, plan.evidence.text())
    question = yes_no_question(spec.query)
    return {"drops_gold": flip or Verdict(False, "the rules cannot tell whether the edit flips the answer", "rule"),
            "same_type": Verdict(question, "yes/no against a yes/no question" if question
                                 else "a yes/no answer to a question that is not a yes/no question", "rule")}


def _numbered(sentences: tuple[str, ...]) -> str:
    return "\n".join(f"{i}. {s}" for i, s in enumerate(sentences))


def evidence_of(spec: InstanceSpec) -> Evidence:
    """The gold paragraphs' sentences in stored order (the answer sentence set by the generator's edit)."""
    sentences = tuple(x for para in paragraphs(spec, "supporting") for x in para.sentences if x)
    if not sentences:
        raise NoSafeEdit("no supporting paragraph to edit")
    return Evidence(sentences, 0)


def plan_from_rewrite(evidence: Evidence, reply: dict, method: str) -> Plan:
    """A plan from the generator's rewritten sentences: the changed run of sentences becomes the one edited unit."""
    wrong = str(reply.get("wrong_answer", "")).strip()
    rewrites = reply.get("sentences") or {}
    if not wrong or not isinstance(rewrites, dict) or not rewrites:
        raise NoSafeEdit("the generator gave no wrong answer or no rewritten sentence")
    new = list(evidence.sentences)
    for key, value in rewrites.items():
        if not str(key).strip().isdigit() or not 0 <= int(key) < len(new) or not str(value).strip():
            raise NoSafeEdit(f"the generator rewrote a sentence that does not exist ({key!r})")
        new[int(key)] = " ".join(str(value).split())
    changed = [i for i, (a, b) in enumerate(zip(evidence.sentences, new, strict=True)) if a != b]
    if not changed:
        raise NoSafeEdit("the generator changed nothing")
    i, j = changed[0], changed[-1]
    joiner = evidence.joiner
    unit_old, unit_new = joiner.join(evidence.sentences[i:j + 1]), joiner.join(new[i:j + 1])
    merged = Evidence((*evidence.sentences[:i], unit_old, *evidence.sentences[j + 1:]), i, joiner)
    start, end, new_end = one_span_diff(unit_old, unit_new)
    edit = Edit(start, unit_old[start:end], unit_new[start:new_end], method)
    kind = str(reply.get("answer_type", "")).strip()[:40]
    return Plan(merged, edit, wrong, (wrong,), None, kind, {"gold_mentions_left": 0, "generated": True,
                                                            "sentences_rewritten": len(changed)})


def generate_plan(spec: InstanceSpec, complete_json: CompleteJson, method: str, feedback: str = "") -> Plan:
    """The generator's plan for one item; NoSafeEdit says why its reply cannot be used."""
    assert spec.reference is not None
    evidence = evidence_of(spec)
    prompt = GENERATE_PROMPT.format(question=spec.query, gold=spec.reference.answers[0].text.strip(),
                                    numbered=_numbered(evidence.sentences),
                                    feedback=f"\nA previous attempt failed these checks: {feedback}\n" if feedback else "")
    try:
        reply = complete_json(prompt)
    except BudgetReached:
        raise
    except Exception as exc:  # noqa: BLE001 - the item is skipped with the reason
        raise NoSafeEdit(f"generator call failed: {type(exc).__name__}") from None
    return plan_from_rewrite(evidence, reply or {}, method)


def failed(verdicts: dict[str, Verdict]) -> list[str]:
    """The checks an item failed."""
    return [name for name, v in verdicts.items() if not v.passed]


def describe_failures(verdicts: dict[str, Verdict]) -> str:
    """The failed checks with their reasons, for the skip list and the generator's second try."""
    return "; ".join(f"{name}: {verdicts[name].reason}" for name in failed(verdicts))


def verdicts_dict(verdicts: dict[str, Verdict]) -> dict[str, Any]:
    """The verdicts as stored on the built item."""
    return {name: v.to_dict() for name, v in verdicts.items()}


def with_checks(plan: Plan, verdicts: dict[str, Verdict]) -> Plan:
    """The plan carrying its verdicts in its notes (they reach the instance's metadata)."""
    return replace(plan, notes={**plan.notes, "checks": verdicts_dict(verdicts)})


def scripted_reply(prompt: str, wrong: str, gold: str) -> str:
    """A generator reply that swaps every mention of `gold` in the prompt's numbered sentences for `wrong` (the shape
    the fake server is scripted with in tests and benches)."""
    block = prompt.split("numbered:\n", 1)[1].split("\n\nPick a wrong answer", 1)[0]
    rewrites = {}
    for line in block.splitlines():
        number, _, sentence = line.partition(". ")
        if gold in sentence:
            rewrites[number] = sentence.replace(gold, wrong)
    return json.dumps({"wrong_answer": wrong, "answer_type": "entity", "sentences": rewrites})
