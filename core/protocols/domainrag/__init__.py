"""DomainRAG: six abilities of a domain (Chinese college admissions) assistant under the paper's reference settings.

An instance is one question of one ability (`attributes.question_type`: extractive, conversational, structural,
faithful, time_sensitive, multidoc; plus faithful_anti, the same faithful question whose reference is the
anti-answer). It carries every document its settings need, told apart by the variant key `setting` (built by
`gauntlet domainrag build`, core/protocols/domainrag/builder.py): 'gold' (the annotated positive passages; for
structural QA the plain-text page), 'html' (the cleaned HTML page), 'page' (multi-doc's full pages), 'anti' (the
anti-reference), 'noise' (24 irrelevant passages, in draw order) and one setting per retriever with its `rank`
('bm25' and 'dense' from the construction pipeline's retrievers over the corpus slice, 'released_bm25' and
'released_dense' from the authors' released runs). The conditions pick among them with the generic condition settings;
each applies to the question types that have those documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.protocols import register
from core.protocols.base import Builder, Condition, Prompt, Protocol, ProtocolPage, needs
from core.protocols.domainrag.declarations import EM_AUTHORS, EMS_AUTHORS, F1_JIEBA, GE_PAPER, ROUGE_L_JIEBA
from core.protocols.paper import PaperTableSpec
from core.protocols.prompting import DocumentView, InstanceView, reference_messages
from core.store.schema import InstanceSpec

NAME = "domainrag"
SETTING_KEY = "setting"
ABILITIES: tuple[str, ...] = ("extractive", "conversational", "structural", "faithful", "time_sensitive", "multidoc")
ANTI = "faithful_anti"
QUESTION_TYPES: tuple[str, ...] = (*ABILITIES, ANTI)
GOLD_TYPES = ABILITIES  # question types whose reference is the gold answer
RETRIEVAL_TYPES = ("extractive", "conversational", "time_sensitive", "multidoc")
RELEASED_TYPES = ("extractive", "conversational", "time_sensitive")  # the authors released runs for these
OURS, RELEASED = ("bm25", "dense"), ("released_bm25", "released_dense")
RETRIEVERS: tuple[str, ...] = (*OURS, *RELEASED)
TOP_K: tuple[int, ...] = (1, 3)
NOISE_COUNTS: tuple[int, ...] = (4, 9, 14, 19, 24)
POSITIONS: tuple[str, ...] = ("first", "middle", "last")
CLOSED_BOOK, GOLDEN, ANTI_REFERENCE = "close_book", "", "anti_reference"
HTML, HTML_AS_TEXT, FULL_PAGES = "html", "html_as_text", "full_pages"


def noise_condition(count: int, position: str) -> str:
    """The condition name of the gold passage among `count` noise passages at `position`."""
    return f"noise_{count}_{position}"


def repeated_condition(count: int) -> str:
    """The condition name of the gold passage repeated to the size of the `count`-noise bundle (count + 1 copies)."""
    return f"repeated_gold_{count}"


def retrieval_condition(retriever: str, k: int) -> str:
    """The condition name of a retriever's top-k passages."""
    return f"{retriever}_top{k}"


def declared_position(count: int, position: str) -> int:
    """The 1-based place of the gold passage among count + 1 documents (middle: after count // 2 noise passages)."""
    return {"first": 1, "middle": count // 2 + 1, "last": count + 1}[position]


NOISE_CONDITIONS: dict[str, tuple[int, str]] = {
    noise_condition(n, p): (n, p) for n in NOISE_COUNTS for p in POSITIONS}
REPEATED_CONDITIONS: dict[str, int] = {repeated_condition(n): n for n in NOISE_COUNTS}
RETRIEVAL_CONDITIONS: dict[str, tuple[str, int]] = {
    retrieval_condition(r, k): (r, k) for r in RETRIEVERS for k in TOP_K}


def _only(setting: str | list[str], **more: Any) -> dict[str, Any]:
    return {"include": {SETTING_KEY: setting, **more}}


def _conditions() -> tuple[Condition, ...]:
    retrieval = [Condition(name, f"the top {k} passage(s) of {retriever.replace('_', ' ')} retrieval",
                           _only(retriever, rank=list(range(1, k + 1))),
                           RELEASED_TYPES if retriever in RELEASED else RETRIEVAL_TYPES)
                 for name, (retriever, k) in RETRIEVAL_CONDITIONS.items()]
    noise = [Condition(name, f"the gold passage {position} among {n} noise passages",
                       {**_only(["gold", "noise"]), "noise": n, "order": f"support_{position}"}, ("extractive",))
             for name, (n, position) in NOISE_CONDITIONS.items()]
    repeated = [Condition(name, f"the gold passage given {n + 1} times (the size of the {n}-noise bundle)",
                          {**_only("gold"), "repeat": n + 1}, ("extractive",))
                for name, n in REPEATED_CONDITIONS.items()]
    return (
        Condition(GOLDEN, "golden reference: the annotated positive passage(s); structural QA: the page as plain text",
                  _only("gold"), GOLD_TYPES),
        Condition(CLOSED_BOOK, "no documents: the question alone", {"documents": "none"}, GOLD_TYPES),
        Condition(ANTI_REFERENCE, "the anti-reference alone; scored against the anti-answer", _only("anti"), (ANTI,)),
        Condition(HTML, "the same page as cleaned HTML", _only("html"), ("structural",)),
        Condition(HTML_AS_TEXT, "the cleaned HTML converted to text by us (tables as Markdown)",
                  {**_only("html"), "html": "text"}, ("structural",)),
        Condition(FULL_PAGES, "the full pages the passages come from", _only("page"), ("multidoc",)),
        *retrieval, *noise, *repeated,
    )


def domainrag_prompt(instance: InstanceView, documents: Sequence[Any], condition: Condition) -> Prompt:
    """The neutral reference-QA prompt (history turns, the question's date, short or long answers), and where the
    gold passages sit: `gold_positions`, 1-based places in the prompt of the supporting documents. A condition that
    finds none of its documents (an instance built without them) is an error, never a silent closed book."""
    if not documents and condition.settings.get("documents") != "none":
        raise ValueError(f"instance {instance.id} has no documents for condition {condition.name or '(default)'!r}: "
                         "rebuild it with `gauntlet domainrag build` (dense conditions need an embedder)")
    positions = [i for i, d in enumerate(documents, start=1) if d.role == "supporting"]
    return reference_messages(instance, documents, condition.settings.get("policy")), {"gold_positions": positions}


def _question_type(spec: InstanceSpec) -> str | None:
    kind = spec.attributes.question_type
    return None if kind in QUESTION_TYPES else (
        f"a domainrag instance needs attributes.question_type, one of {', '.join(QUESTION_TYPES)}")


DOMAINRAG = register(Protocol(
    name=NAME,
    title="DomainRAG (domain abilities)",
    description="Chinese college-admissions QA: extractive, conversational, structural (HTML vs text), faithful "
                "(anti-references), time-sensitive and multi-document abilities under close-book, golden, retrieved "
                "(BM25 / dense top-k) and noisy references (noise count x gold position, repeated-gold control).",
    required={"reference": needs("reference", "a domainrag instance needs a reference answer"),
              "attributes.question_type": _question_type},
    render=domainrag_prompt,
    conditions=_conditions(),
    metrics=("exact_match", "strict_exact_match", "token_f1", "rouge_l", EM_AUTHORS, EMS_AUTHORS, F1_JIEBA, ROUGE_L_JIEBA,
             "consistency", GE_PAPER),
    headline=("exact_match",),
    page=ProtocolPage("pages/domain_abilities.py", "Domain abilities", ":material/school:"),
    builder=Builder(
        "DomainRAG",
        "DomainRAG: the six abilities with their settings (golden, HTML/text, anti-reference, noise, retrieved).",
        "The DomainRAG release folder", "domainrag", f"{__name__}.builder_app:build", folder=True),
    doc="docs/domainrag.md",
    paper_tables=(PaperTableSpec(
        "2", "Overall results: setting x model, EM / EMS / F1 / ROUGE-L / GE per ability",
        "core.protocols.domainrag.paper:table_2",
        {"em": ("authors", "normalised"), "tokenizer": ("jieba", "char"), "retrieval": ("released", "ours"),
         "ge": ("paper", "product")}),),
))


def spec_prompt(spec: InstanceSpec, condition: str = GOLDEN, order: str = "stored", seed: int = 0) -> Prompt:
    """(messages, prompt_meta) of an instance spec under `condition`, without a database: what a run sends (documents
    at their stored positions, as the import stores them)."""
    view = InstanceView(query=spec.query, protocol=spec.protocol, language=spec.language,
                        reference=spec.reference.model_dump() if spec.reference else None,
                        attributes=spec.attributes.model_dump())
    documents = [DocumentView(doc_uid=d.doc_id, position=i, title=d.title, text=d.text, role=d.role,
                              content_type=d.content_type, variant=d.variant) for i, d in enumerate(spec.documents)]
    return DOMAINRAG.prompt(view, documents, condition, order, seed)


def applicable_conditions(spec: InstanceSpec) -> tuple[str, ...]:
    """The names of the conditions that apply to the instance's question type, in declaration order."""
    attributes = spec.attributes.model_dump()
    return tuple(c.name for c in DOMAINRAG.conditions if c.applies(attributes))
