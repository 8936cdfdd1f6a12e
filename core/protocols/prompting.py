"""Prompt assembly shared by the protocols: numbered constraints (system_prompt), numbered documents and the query
(user_prompt), the generic condition transformations of a document bundle (subset, noise count, HTML as text, order, source policy) and fitting
a prompt into a context window by dropping whole documents from the end."""

from __future__ import annotations

import hashlib
import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from core.plugins import DEFAULT_PROTOCOL
from core.protocols.html import html_to_text
from core.protocols.messages import ChatMessage

if TYPE_CHECKING:  # type hints only: importing the protocols (the CLI's help) must not load the ORM
    from core.store.models import Constraint

DocumentOrder = Literal["stored", "shuffle", "support_first", "support_middle", "support_last"]
ORDERS: tuple[str, ...] = ("stored", "shuffle", "support_first", "support_middle", "support_last")
Rendered = TypeVar("Rendered")  # what a prompt renderer returns (messages, or messages with their metadata)
SUPPORT_ROLES = ("supporting", "partial", "conflicting")
QUESTION_MARKER = "Question:"
DOCUMENTS_HEADER = "Documents:"
SOURCE_POLICIES = {
    "documents": "Base your answer on the documents: where they disagree with what you know, the documents take "
                 "priority.",
    "prior_knowledge": "You may also rely on your own knowledge where the documents are incomplete or wrong.",
}
CONDITION_SETTINGS = {
    "documents": "'none' drops every document (closed book)",
    "include": "keep only documents matching {key: value or [values]} (key: role, content_type or a variant key)",
    "exclude": "drop documents matching {key: value or [values]}",
    "noise": "keep this many noise documents (the first ones in stored order)",
    "passages": "give exactly this many documents, mixing answer-bearing and noise ones by 'noise_rate' (RGB's "
                "setting: noise ceil(passages x rate), the rest answer-bearing, counterfactual ones standing for the "
                "answer-bearing where present; when one kind runs short the other fills up)",
    "noise_rate": "the share of noise documents among 'passages' (0 to 1; 1: negatives only)",
    "repeat": "give each supporting, partial or conflicting document this many times in a row (a repeated-gold "
              "control the size of a noisy bundle)",
    "html": "'text' converts documents whose content_type is 'html' to text (tables as Markdown)",
    "order": f"document order overriding the run's: {', '.join(ORDERS)}",
    "seed": "a fixed seed for order 'shuffle' overriding the run's, mixed with the bundle's document ids so each "
            "instance gets its own reproducible order (both recorded in prompt_meta)",
    "policy": f"a source-priority line in the system prompt: {', '.join(SOURCE_POLICIES)}",
}


@dataclass(frozen=True)
class DocumentView:
    """A document as a prompt sees it (a transformed copy of a stored Document)."""

    doc_uid: str
    position: int
    title: str
    text: str
    role: str
    content_type: str = "text"
    variant: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class InstanceView:
    """What a protocol needs of an instance to build its prompt."""

    query: str
    id: int | None = None
    protocol: str = DEFAULT_PROTOCOL
    mode: str | None = None
    language: str | None = None
    constraints: tuple[Any, ...] = ()
    reference: Mapping[str, Any] | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)


def system_prompt(constraints: Sequence[Constraint]) -> str:
    """The constraints, by position, as a numbered instruction set."""
    ordered = sorted(constraints, key=lambda c: c.position)
    lines = [f"{i}. {c.text.strip()}" for i, c in enumerate(ordered, start=1)]
    header = "Follow every instruction below when answering from the documents provided by the user."
    return header + "\n\n" + "\n".join(lines)


def order_documents(documents: Sequence[Any], order: str, seed: int = 0) -> list[Any]:
    """Documents in the requested order; 'support_*' places supporting/partial/conflicting ones as a block."""
    if order not in ORDERS:
        raise ValueError(f"unknown document order {order!r}; known: {', '.join(ORDERS)}")
    stored = sorted(documents, key=lambda d: d.position)
    if order == "stored":
        return stored
    if order == "shuffle":
        shuffled = list(stored)
        random.Random(seed).shuffle(shuffled)
        return shuffled
    support = [d for d in stored if d.role in SUPPORT_ROLES]
    others = [d for d in stored if d.role not in SUPPORT_ROLES]
    if order == "support_first":
        return support + others
    if order == "support_last":
        return others + support
    middle = len(others) // 2
    return others[:middle] + support + others[middle:]


def user_prompt(documents: Sequence[Any], query: str) -> str:
    """Documents numbered [doc 1]..[doc N] with titles, then the query."""
    blocks = [f"[doc {i}] {d.title.strip()}\n{d.text.strip()}" for i, d in enumerate(documents, start=1)]
    return f"{DOCUMENTS_HEADER}\n\n" + "\n\n".join(blocks) + f"\n\n{QUESTION_MARKER} {query.strip()}"


def bundle_meta(documents: Sequence[Any]) -> dict[str, list[str]]:
    """The prompt_meta entries naming the documents of a prompt, in prompt order."""
    return {"doc_order": [d.doc_uid for d in documents], "doc_roles": [d.role for d in documents]}


def constraint_meta(constraints: Sequence[Any]) -> dict[str, list[str]]:
    """The prompt_meta entry naming the constraints of a prompt, in prompt order."""
    return {"constraint_ids": [c.cid for c in sorted(constraints, key=lambda c: c.position)]}


def check_condition_settings(settings: Mapping[str, Any]) -> None:
    """Raise ValueError for an unknown setting key or value (a condition typo must not silently do nothing)."""
    unknown = sorted(set(settings) - set(CONDITION_SETTINGS))
    if unknown:
        raise ValueError(f"unknown condition setting(s) {', '.join(unknown)}; known: {', '.join(CONDITION_SETTINGS)}")
    checks = {
        "documents": settings.get("documents", "none") == "none",
        "html": settings.get("html", "text") == "text",
        "order": settings.get("order", "stored") in ORDERS,
        "policy": settings.get("policy", "documents") in SOURCE_POLICIES,
        "noise": isinstance(settings.get("noise", 0), int) and settings.get("noise", 0) >= 0,
        "passages": type(settings.get("passages", 1)) is int and settings.get("passages", 1) >= 1,
        "noise_rate": isinstance(settings.get("noise_rate", 0), int | float)
        and 0 <= settings.get("noise_rate", 0) <= 1 and ("noise_rate" in settings) == ("passages" in settings),
        "repeat": type(settings.get("repeat", 1)) is int and settings.get("repeat", 1) >= 1,
        "seed": type(settings.get("seed", 0)) is int and settings.get("seed", 0) >= 0,
        "include": isinstance(settings.get("include", {}), Mapping),
        "exclude": isinstance(settings.get("exclude", {}), Mapping),
    }
    bad = [key for key, ok in checks.items() if not ok]
    if bad:
        raise ValueError(f"bad value for condition setting(s) {', '.join(bad)}: "
                         + "; ".join(f"{key}: {CONDITION_SETTINGS[key]}" for key in bad))


def matches(document: Any, where: Mapping[str, Any]) -> bool:
    """Whether `document` matches every {key: value or [values]} of `where` (role, content_type or a variant key)."""
    for key, wanted in where.items():
        value = getattr(document, key) if key in ("role", "content_type") else (document.variant or {}).get(key)
        if value not in (wanted if isinstance(wanted, list | tuple | set) else [wanted]):
            return False
    return True


def filter_documents(documents: Sequence[Any], include: Mapping[str, Any] | None = None,
                     exclude: Mapping[str, Any] | None = None) -> list[Any]:
    """The documents matching `include` (all when None) and not matching `exclude`."""
    return [d for d in documents if (not include or matches(d, include)) and not (exclude and matches(d, exclude))]


def keep_noise(documents: Sequence[Any], count: int) -> list[Any]:
    """The bundle with only its first `count` noise documents (stored order); other roles untouched."""
    noise = [d.position for d in sorted(documents, key=lambda d: d.position) if d.role == "noise"][:count]
    return [d for d in documents if d.role != "noise" or d.position in noise]


ANSWER_ROLES = ("supporting", "partial", "conflicting")
NESTED_INDEX_RE = re.compile(r"#[^#\[]*\[(\d+)\]\[(\d+)\]$")


def answer_rank(document: Any) -> tuple[int, int]:
    """(rank within its group, group) of an answer-bearing document: a nested source path 'positive[g][r]' (RGB _int:
    one group per part of the answer) gives (r, g), else (0, position); sorting by it takes one of each group first."""
    m = NESTED_INDEX_RE.search(document.doc_uid)
    return (int(m.group(2)), int(m.group(1))) if m else (0, document.position)


def noise_mix(documents: Sequence[Any], passages: int, rate: float) -> list[Any]:
    """RGB's noise-ratio bundle (chen700564/RGB evalue.py `processdata`): ceil(passages x rate) noise documents (the
    first in stored order) and the rest answer-bearing ones (counterfactual ones where the bundle has any; nested
    groups one of each first, and at least one of each group); when one kind runs short the other fills up (RGB's rule
    for plain records, here for every record)."""
    fake = [d for d in documents if d.role == "counterfactual"]
    answer = sorted(fake or [d for d in documents if d.role in ANSWER_ROLES], key=answer_rank)
    noise = sorted((d for d in documents if d.role == "noise"), key=lambda d: d.position)
    want_noise = math.ceil(passages * rate)
    groups = len({answer_rank(d)[1] for d in answer}) if any(NESTED_INDEX_RE.search(d.doc_uid) for d in answer) else 0
    want_answer = 0 if rate >= 1 else max(passages - want_noise, groups, passages - len(noise))
    kept_answer = answer[:want_answer]
    kept = kept_answer + noise[:passages - len(kept_answer)]
    return sorted(kept, key=lambda d: d.position)


def as_view(document: Any, **changes: Any) -> DocumentView:
    """A DocumentView copy of a stored document (ORM row or column row), with `changes` applied."""
    fields = {"doc_uid": document.doc_uid, "position": document.position, "title": document.title or "",
              "text": document.text, "role": document.role,
              "content_type": getattr(document, "content_type", "text") or "text",
              "variant": getattr(document, "variant", None) or {}}
    return DocumentView(**{**fields, **changes})


def repeat_support(documents: Sequence[Any], times: int) -> list[Any]:
    """The bundle with every supporting, partial or conflicting document given `times` times in a row (same uid and
    position, so every order keeps the copies together)."""
    return [copy for d in documents for copy in ([d] * times if d.role in SUPPORT_ROLES else [d])]


def html_as_text(documents: Sequence[Any]) -> list[Any]:
    """The bundle with every 'html' document converted to text (content_type becomes 'text')."""
    return [as_view(d, text=html_to_text(d.text), content_type="text") if d.content_type == "html" else d
            for d in documents]


def bundle_seed(seed: int, documents: Sequence[Any]) -> int:
    """A shuffle seed for one bundle: `seed` mixed with its document ids (stable, different per instance)."""
    key = f"{seed}:" + "|".join(sorted(d.doc_uid for d in documents))
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def condition_bundle(documents: Sequence[Any], settings: Mapping[str, Any], order: str = "stored",
                     seed: int = 0) -> tuple[list[Any], dict[str, Any]]:
    """The documents a condition's settings keep, transformed and ordered, and prompt_meta saying what was done
    (order and seed always; dropped and converted documents when a setting changed them)."""
    check_condition_settings(settings)
    stored = sorted(documents, key=lambda d: d.position)
    kept = [] if settings.get("documents") == "none" else stored
    kept = filter_documents(kept, settings.get("include"), settings.get("exclude"))
    if "noise" in settings:
        kept = keep_noise(kept, settings["noise"])
    if "passages" in settings:
        kept = noise_mix(kept, settings["passages"], settings["noise_rate"])
    if "repeat" in settings:
        kept = repeat_support(kept, settings["repeat"])
    converted = [d.doc_uid for d in kept if d.content_type == "html"] if settings.get("html") == "text" else []
    if converted:
        kept = html_as_text(kept)
    order = settings.get("order", order)
    meta: dict[str, Any] = {"order": order, "seed": settings.get("seed", seed)}
    if "seed" in settings:
        seed = meta["bundle_seed"] = bundle_seed(settings["seed"], kept)
    positions = {d.position for d in kept}
    dropped = [d.doc_uid for d in stored if d.position not in positions]
    if dropped:
        meta["condition_dropped"] = dropped
    if converted:
        meta["html_as_text"] = converted
    return order_documents(kept, order, seed), meta


def fit_documents(documents: list[Any], render: Callable[[list[Any]], Rendered],
                  count: Callable[[Rendered], int], limit: int) -> tuple[int, Rendered, int] | None:
    """(kept, messages, tokens) of the longest prefix of `documents` (at least one document when there are any)
    whose rendered prompt counts at most `limit` tokens; None when none fits. Whole documents are dropped from the
    end of the bundle, so the lowest-priority (last) ones go first."""
    low, high = (1 if documents else 0), len(documents)
    best: tuple[int, Rendered, int] | None = None
    while low <= high:
        middle = (low + high) // 2
        messages = render(documents[:middle])
        tokens = count(messages)
        if tokens <= limit:
            best, low = (middle, messages, tokens), middle + 1
        else:
            high = middle - 1
    return best


REFERENCE_LINES = {
    "documents": "Answer the question using the documents provided by the user.",
    "closed_book": "Answer the question.",
    "language": "Answer in the language of the question.",
    "short": "Keep the answer short: give the answer itself, without explanation.",
    "mcq": "Answer with the letter of the correct option only ({letters}).",
    "abstain_documents": "If the documents do not contain the answer, say that the documents do not contain the "
                         "answer.",
    "abstain_closed_book": "If you do not know the answer, say that you do not know.",
    "date": "The question is asked on {date}.",
    "instructions": "Where the question gives its own instructions on length, format or language, follow them.",
}
# The answer forms asked to be short. An unanswerable item is asked in its protocol's answer form (the form its
# answerable items take: `answer_form` of reference_messages, "short" when the protocol declares none), never by its
# own answer type, so the prompt does not tell which items are unanswerable.
SHORT_ANSWERS = ("short", "boolean", "multi")
DEFAULT_ANSWER_FORM = "short"
# The instance's own instructions the fixed wording yields to (checker ids or their "group:" prefixes): "keep the
# answer short" to any asking for a length, a structure or added content; "the language of the question" to any
# naming the response's language.
SHORT_YIELDS_TO = ("length_constraints:", "detectable_format:", "detectable_content:", "combination:",
                   "startend:end_checker", "keywords:existence", "keywords:frequency", "keywords:letter_frequency")
LANGUAGE_YIELDS_TO = ("language:response_language", "change_case:english_capital", "change_case:english_lowercase")


def asks_for(constraints: Sequence[Any], checker_ids: tuple[str, ...]) -> bool:
    """Whether one of the instance's instructions is checked by one of `checker_ids` (or a 'group:' prefix of them)."""
    return any((c_id := getattr(c, "checker_id", None) or "") and c_id.startswith(checker_ids) for c in constraints)


def numbered_documents(documents: Sequence[Any]) -> str:
    """'Documents:' then [doc 1]..[doc N], each with its title when it has one, then its text."""
    blocks = [f"[doc {i}]{' ' + d.title.strip() if d.title.strip() else ''}\n{d.text.strip()}"
              for i, d in enumerate(documents, start=1)]
    return f"{DOCUMENTS_HEADER}\n\n" + "\n\n".join(blocks)


def query_messages(instance: InstanceView, documents: Sequence[Any]) -> list[ChatMessage]:
    """The query verbatim as the only message (IFEval's protocol), after the numbered documents when there are any."""
    content = f"{numbered_documents(documents)}\n\n{instance.query}" if documents else instance.query
    return [ChatMessage(role="user", content=content)]


def answer_form_of(reference: Mapping[str, Any], answer_form: str | None) -> str:
    """The form the prompt asks for: the item's own answer type, or for an unanswerable item (or one without a
    reference) the protocol's declared `answer_form` (DEFAULT_ANSWER_FORM when none), so answerable and unanswerable
    items read the same lines."""
    own = reference.get("answer_type")
    return (answer_form or DEFAULT_ANSWER_FORM) if own in (None, "", "unanswerable") else own


def reference_messages(instance: InstanceView, documents: Sequence[Any], policy: str | None = None,
                       answer_form: str | None = None) -> list[ChatMessage]:
    """The neutral reference-QA prompt: answer from the documents (or closed book when there are none); MCQ: the
    option letter; otherwise short answers, and 'the documents do not contain the answer' is always allowed (on
    every question, so it never reveals which ones are unanswerable). The fixed wording on length and language
    yields to the instance's own instructions (SHORT_YIELDS_TO, LANGUAGE_YIELDS_TO). An unanswerable item is asked in
    `answer_form`, its protocol's form (answer_form_of), never by its answerability. Earlier turns come as chat
    messages."""
    reference = instance.reference or {}
    choices = reference.get("choices") or {}
    mcq = reference.get("answer_type") == "mcq" and bool(choices)
    book = "documents" if documents else "closed_book"
    own_length, own_language = asks_for(instance.constraints, SHORT_YIELDS_TO), asks_for(instance.constraints,
                                                                                           LANGUAGE_YIELDS_TO)
    lines = [REFERENCE_LINES[book], *([] if own_language else [REFERENCE_LINES["language"]])]
    if policy and documents:
        lines.append(SOURCE_POLICIES[policy])
    if mcq:
        lines.append(REFERENCE_LINES["mcq"].format(letters=", ".join(sorted(choices))))
    else:
        if answer_form_of(reference, answer_form) in SHORT_ANSWERS and not own_length:
            lines.append(REFERENCE_LINES["short"])
        lines.append(REFERENCE_LINES[f"abstain_{book}"])
    if instance.attributes.get("date"):
        lines.append(REFERENCE_LINES["date"].format(date=instance.attributes["date"]))
    if own_length or own_language:
        lines.append(REFERENCE_LINES["instructions"])
    question = f"{QUESTION_MARKER} {instance.query.strip()}"
    if mcq:
        options = [f"{letter}. {text.strip()}" for letter, text in sorted(choices.items())]
        question += "\n\nOptions:\n" + "\n".join(options)
    user = f"{numbered_documents(documents)}\n\n{question}" if documents else question
    history = [ChatMessage(role=turn["role"], content=turn["content"])
               for turn in instance.attributes.get("history") or []]
    return [ChatMessage(role="system", content=" ".join(lines)), *history, ChatMessage(role="user", content=user)]
