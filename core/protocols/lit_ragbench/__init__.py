"""LIT-RAGBench: which generator ability fails (Integration, Reasoning, Logic, Table, Abstention), in English and Japanese.

Each question carries one or two aspect codes (`attributes.aspects`, the source's qa_type); it counts for every aspect
it has and for the category of each. The generator sees the question with its positive and negative chunks mixed in
a seeded order (tables in their own format) and is told to decline when the documents do not carry the answer. One
judge decides 1/0 per response against the reference answer and reasoning (`judged_accuracy`: on abstention items a
refusal is the correct answer) and whether the response declines (`refusal`, for the over-abstention rate on the
other four categories). Aggregates: core.protocols.lit_ragbench.analysis.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from core.protocols import protocol_errors, register
from core.protocols.base import Condition, Prompt, Protocol, ProtocolPage, needs
from core.protocols.lit_ragbench.released import PAPER, PAPER_CONDITION, PRODUCT, paper_prompt
from core.protocols.messages import ChatMessage
from core.protocols.paper import PaperTableSpec
from core.protocols.prompting import QUESTION_MARKER, InstanceView, numbered_documents
from core.store.schema import InstanceSpec

NAME = "lit_ragbench"
SOURCE_FORMAT = "lit-ragbench"  # the importer whose instances convert to this protocol
ABSTENTION = "Abstention"
DEFAULT_SEED = 0
RESHUFFLE_SEED = 1


@dataclass(frozen=True)
class Aspect:
    """One evaluation aspect: its source code, its category and a short label."""

    code: str
    category: str
    label: str


ASPECTS: dict[str, Aspect] = {a.code: a for a in (
    Aspect("I_multiple", "Integration", "multiple sources"),
    Aspect("R_multihop", "Reasoning", "multi-hop"),
    Aspect("R_calculate", "Reasoning", "calculation"),
    Aspect("L_synonym", "Logic", "synonym / unit"),
    Aspect("L_numerical_inclusion", "Logic", "numerical inclusion"),
    Aspect("L_conceptual_inclusion", "Logic", "conceptual inclusion"),
    Aspect("T_html", "Table", "HTML"),
    Aspect("T_html_cell_merged", "Table", "HTML, merged cells"),
    Aspect("T_markdown", "Table", "Markdown"),
    Aspect("T_csv", "Table", "CSV"),
    Aspect("A_negative_only", ABSTENTION, "negative only"),
    Aspect("A_conflicted", ABSTENTION, "conflicted"),
    Aspect("A_chunk_incompletion", ABSTENTION, "incomplete chunk"),
)}
CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(a.category for a in ASPECTS.values()))
MAIN_CATEGORIES: tuple[str, ...] = tuple(c for c in CATEGORIES if c != ABSTENTION)

SYSTEM_PROMPTS = {
    "en": (
        "You are the answering step of a retrieval-augmented assistant. The user gives you retrieved documents and a "
        "question.\n"
        "- Answer only from the documents. They were retrieved automatically, so many are unrelated to the question; "
        "tables come in their original format (HTML, Markdown or CSV).\n"
        "- If the documents do not give what the answer needs (nothing relevant, sources that contradict each other, "
        "or a passage cut off before the part you need), first say in one sentence that you cannot answer from the "
        "documents; you may then mention related information they do contain.\n"
        "- Otherwise answer directly, in the unit and form the question asks for.\n"
        "- Answer in the language of the question."
    ),
    "ja": (
        "あなたは検索拡張型アシスタントの回答担当です。ユーザーから、検索で集められた文書と質問が渡されます。\n"
        "- 文書に書かれている内容だけを根拠に答えてください。文書は自動検索の結果なので、質問と無関係なものも多く含まれます。"
        "表は元の形式（HTML、Markdown、CSV）のまま渡されます。\n"
        "- 答えに必要な根拠が文書にない場合（関係する記述がない、文書どうしが食い違っている、必要な箇所の手前で文章が切れている等）は、"
        "まず文書からは答えられないことを一文で述べてください。そのあとで、文書にある関連情報を添えても構いません。\n"
        "- 根拠がある場合は、質問が求める単位・形式で直接答えてください。\n"
        "- 質問と同じ言語で答えてください。"
    ),
}


def aspect_codes(codes: Iterable[str]) -> list[str]:
    """The known aspect codes among `codes`, in their given order, without repeats."""
    return [c for c in dict.fromkeys(codes) if c in ASPECTS]


def categories_of(codes: Iterable[str]) -> list[str]:
    """The categories of the aspect codes, in the protocol's category order."""
    found = {ASPECTS[c].category for c in codes if c in ASPECTS}
    return [c for c in CATEGORIES if c in found]


def prompt_language(instance: InstanceView) -> str:
    """'ja' for Japanese instances, else 'en' (the two languages the benchmark ships)."""
    return "ja" if (instance.language or "").lower().startswith("ja") else "en"


def lit_prompt(instance: InstanceView, documents: Sequence[Any], condition: Condition) -> Prompt:
    """The product setting: system, our answering rules in the question's language; user, the numbered documents (as
    stored, so tables keep their format) then 'Question:' and the question (the marker the offline baselines read).
    The paper_prompts condition: the authors' released prompts (core.protocols.lit_ragbench.released)."""
    language = prompt_language(instance)
    if condition.name == PAPER_CONDITION:
        messages, meta = paper_prompt(instance, documents, language)
        return messages, {"prompt_language": language, **meta}
    question = f"{QUESTION_MARKER} {instance.query.strip()}"
    user = f"{numbered_documents(documents)}\n\n{question}" if documents else question
    messages = [ChatMessage(role="system", content=SYSTEM_PROMPTS[language]), ChatMessage(role="user", content=user)]
    return messages, {"prompt_language": language, "prompt_setting": PRODUCT}


def _aspects_problem(spec: InstanceSpec) -> str | None:
    codes = spec.attributes.aspects
    if not codes:
        return "a lit_ragbench instance needs its aspect codes in attributes.aspects"
    if unknown := [c for c in codes if c not in ASPECTS]:
        return f"unknown aspect code(s) {unknown}; known: {', '.join(ASPECTS)}"
    return None


def _abstention_problem(spec: InstanceSpec) -> str | None:
    if spec.reference is None:
        return None
    abstains = ABSTENTION in categories_of(spec.attributes.aspects)
    if abstains != (spec.reference.answer_type == "unanswerable"):
        return "abstention aspects and an 'unanswerable' reference go together (both or neither)"
    return None


def as_lit_ragbench(spec: InstanceSpec) -> InstanceSpec:
    """An imported LIT-RAGBench instance (reference_qa) under this protocol: same content, categories from aspects."""
    attributes = spec.attributes.model_copy(update={"categories": categories_of(spec.attributes.aspects)})
    return spec.model_copy(update={"protocol": NAME, "attributes": attributes})


def conversion_errors(spec: InstanceSpec) -> list[tuple[str, str]]:
    """(field, message) problems that keep `spec` from becoming a lit_ragbench instance."""
    source = spec.metadata.get("format")
    if source != SOURCE_FORMAT:
        return [("metadata.format", f"not a LIT-RAGBench import (format {source!r}, expected {SOURCE_FORMAT!r})")]
    return protocol_errors(as_lit_ragbench(spec))


LIT_RAGBENCH = register(Protocol(
    name=NAME,
    title="LIT-RAGBench",
    description="Integration, Reasoning, Logic, Table and Abstention abilities of the generator (Japanese and "
                "English): judge accuracy per category and aspect, category average, over-abstention.",
    required={
        "reference": needs("reference", "a lit_ragbench instance needs a reference answer"),
        "documents": needs("documents", "a lit_ragbench instance needs its chunks as documents"),
        "attributes.aspects": _aspects_problem,
        "reference.answer_type": _abstention_problem,
    },
    conditions=(
        Condition("", f"positive and negative chunks shuffled with seed {DEFAULT_SEED} (per instance); tables as stored",
                  {"order": "shuffle", "seed": DEFAULT_SEED}),
        Condition("reshuffled", f"the same chunks in another order (seed {RESHUFFLE_SEED}): order sensitivity",
                  {"order": "shuffle", "seed": RESHUFFLE_SEED}),
        Condition("html_as_text", "the default order with HTML chunks converted to text (tables as Markdown)",
                  {"order": "shuffle", "seed": DEFAULT_SEED, "html": "text"}),
        Condition(PAPER_CONDITION, "the default order with the authors' released generator and judge prompts, read at "
                  "run time from the dataset's prompts/ folder (gauntlet run --prompts-dir)",
                  {"order": "shuffle", "seed": DEFAULT_SEED}),
    ),
    metrics=("judged_accuracy", "refusal"),
    aggregates=("over_abstention",),
    headline=("judged_accuracy",),
    decision_scores=f"{__name__}.analysis:decision_scores",
    page=ProtocolPage("pages/rag_abilities.py", "RAG abilities", ":material/psychology:"),
    doc="docs/lit_ragbench.md",
    render=lit_prompt,
    paper_tables=(PaperTableSpec(
        "2", "Accuracy per category (Japanese, English), category average and over-abstention per model",
        "core.protocols.lit_ragbench.paper:table_2", {"prompts": (PAPER, PRODUCT)}),),
))
