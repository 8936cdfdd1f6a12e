"""Constraint fusion: sample atomics by probability, drop contradictory and untriggerable ones, and
optionally let an LLM (through `complete_json(prompt) -> dict`) re-check conflicts, filter, add
query-specific constraints and score the fused set on five quality dimensions."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from core.construction.library import Atomic
from core.language import wordlists
from core.store.schema import CATEGORIES, ConstraintSpec

CompleteJson = Callable[[str], dict]

_TABLES = wordlists("fusion")  # data/wordlists/fusion.en.json
DOMAIN_TARGET_MEAN: dict[str, float] = _TABLES["domain_target_mean"]  # paper Table 5
OVERALL_TARGET_MEAN: float = _TABLES["overall_target_mean"]
CATEGORY_SHARE: dict[str, float] = _TABLES["category_share"]
MAX_PER_SUB_DIMENSION = 2

# Tag pairs that cannot hold together in one instruction set, with the reason recorded on removal.
_LAYOUTS: tuple[str, ...] = tuple(_TABLES["layouts"])
CONFLICT_TABLE: dict[frozenset[str], str] = {
    **{frozenset((a, b)): _TABLES["layout_conflict"] for i, a in enumerate(_LAYOUTS) for b in _LAYOUTS[i + 1:]},
    **{frozenset((a, b)): reason for a, b, reason in _TABLES["conflicts"]},
}
UNIQUE_TAGS: dict[str, str] = _TABLES["unique_tags"]
UNIQUE_CHECKERS: set[str] = set(_TABLES["unique_checkers"])


def _required_texts(a: Atomic) -> list[str]:
    kw = a.kwargs
    if a.checker_id == "enterprise:required_phrase":
        return [kw["phrase"]]
    if a.checker_id == "enterprise:starts_with":
        return [kw["prefix"]]
    if a.checker_id == "enterprise:ends_with":
        return [kw["suffix"]]
    if a.checker_id == "enterprise:keyword_frequency" and kw.get("min_count", 1) > 0:
        return [kw["keyword"]]
    return []


def _forbidden_texts(a: Atomic) -> list[tuple[str, bool]]:
    """(text, whole_word) pairs the atomic forbids."""
    if a.checker_id == "enterprise:forbidden_phrases":
        return [(p, False) for p in a.kwargs["phrases"]]
    if a.checker_id == "keywords:forbidden_words":
        return [(w, True) for w in a.kwargs["forbidden_words"]]
    if a.checker_id == "punctuation:no_comma":
        return [(",", False)]
    return []


def _contains(text: str, forbidden: str, whole_word: bool) -> bool:
    if whole_word:
        return re.search(rf"\b{re.escape(forbidden)}\b", text, re.IGNORECASE) is not None
    return forbidden.lower() in text.lower()


def _phrase_conflict(a: Atomic, b: Atomic) -> str | None:
    for req in _required_texts(a):
        for forb, whole in _forbidden_texts(b):
            if _contains(req, forb, whole):
                return f"required text {req!r} contains forbidden {forb!r}"
    return None


def _numeric_conflict(a: Atomic, b: Atomic) -> str | None:
    kw = {a.checker_id: a.kwargs, b.checker_id: b.kwargs}
    words, chars = kw.get("enterprise:word_count_range"), kw.get("enterprise:char_count_range")
    sections, paras = kw.get("enterprise:section_count"), kw.get("enterprise:paragraph_count_range")
    if (words and chars and words.get("min_words") and chars.get("max_chars")
            and words["min_words"] * 6 > chars["max_chars"]):  # about six characters per word with its space
        return f"{words['min_words']} words do not fit in {chars['max_chars']} characters"
    if words and sections and words.get("max_words") is not None and words["max_words"] < 50 * sections["min_sections"]:
        return f"{sections['min_sections']} sections do not fit in {words['max_words']} words"
    if (paras and sections and paras.get("max_paragraphs") is not None
            and paras["max_paragraphs"] < sections["min_sections"]):
        return f"{sections['min_sections']} sections need more than {paras['max_paragraphs']} paragraphs"
    return None


def _same_kind(a: Atomic, b: Atomic) -> str | None:
    if a.checker_id and a.checker_id == b.checker_id:
        if a.checker_id in UNIQUE_CHECKERS:
            return f"two {a.checker_id} constraints"
        if a.checker_id == "enterprise:citation_count" and a.kwargs.get("pattern") == b.kwargs.get("pattern"):
            return "two citation counts with the same pattern"
        if a.checker_id == "enterprise:required_phrase" and a.precondition == b.precondition:
            return "two fixed sentences for the same situation"
    shared = set(a.tags) & set(b.tags) & set(UNIQUE_TAGS)
    return UNIQUE_TAGS[sorted(shared)[0]] if shared else None


def conflict_reason(a: Atomic, b: Atomic) -> str | None:
    """Why two atomics cannot be in one instruction set, or None if they are compatible."""
    for ta in a.tags:
        for tb in b.tags:
            reason = CONFLICT_TABLE.get(frozenset((ta, tb))) if ta != tb else None
            if reason:
                return reason
    if set(a.excludes) & set(b.tags) or set(b.excludes) & set(a.tags):
        return "declared mutually exclusive"
    return (_same_kind(a, b) or _phrase_conflict(a, b) or _phrase_conflict(b, a) or _numeric_conflict(a, b)
            or _numeric_conflict(b, a))


def remove_conflicts(atomics: list[Atomic]) -> tuple[list[Atomic], list[tuple[str, str]]]:
    """Keep atomics in order, dropping each that conflicts with one already kept; returns (kept, removed)."""
    kept: list[Atomic] = []
    removed: list[tuple[str, str]] = []
    for a in atomics:
        clash = next(((k, r) for k in kept if (r := conflict_reason(k, a))), None)
        if clash:
            removed.append((a.id, f"conflicts with {clash[0].id}: {clash[1]}"))
        else:
            kept.append(a)
    return kept, removed


def triggerable(atomic: Atomic, features: set[str]) -> bool:
    """An atomic can be triggered when the bundle has every feature it requires."""
    return set(atomic.requires) <= features


def sample_target(domain: str, rng: random.Random) -> int:
    """Number of constraints for one instance: around the domain mean, clamped to [5, 12]."""
    mean = DOMAIN_TARGET_MEAN.get(domain, OVERALL_TARGET_MEAN)
    return max(5, min(12, round(rng.gauss(mean, 1.5))))


def category_quotas(target: int) -> dict[str, int]:
    """Split a target count over the three categories by the paper's proportions (each at least 1)."""
    quotas = {c: max(1, round(target * CATEGORY_SHARE[c])) for c in ("persona", "knowledge_protocol")}
    quotas["output"] = max(1, target - sum(quotas.values()))
    return quotas


def weighted_order(atomics: list[Atomic], rng: random.Random) -> list[Atomic]:
    """Order for sampling without replacement proportional to probability (Efraimidis-Spirakis keys)."""
    keyed = [(rng.random() ** (1.0 / a.probability), a.id, a) for a in atomics if a.probability > 0]
    return [a for _, _, a in sorted(keyed, key=lambda t: (-t[0], t[1]))]


def _fill(candidates: list[Atomic], chosen: list[Atomic], quota: int, removed: list) -> None:
    taken = 0
    for a in candidates:
        if taken >= quota:
            return
        if sum(c.sub_dimension == a.sub_dimension for c in chosen) >= MAX_PER_SUB_DIMENSION:
            continue
        clash = next(((k, r) for k in chosen if (r := conflict_reason(k, a))), None)
        if clash:
            removed.append((a.id, f"conflicts with {clash[0].id}: {clash[1]}"))
            continue
        chosen.append(a)
        taken += 1


def sample_atomics(library: list[Atomic], target: int, features: set[str],
                   rng: random.Random) -> tuple[list[Atomic], list[tuple[str, str]]]:
    """Sample a conflict-free set of about `target` triggerable atomics; returns (chosen, removed)."""
    removed = [(a.id, "cannot be triggered: bundle lacks " + ", ".join(sorted(set(a.requires) - features)))
               for a in library if not triggerable(a, features)]
    pool = weighted_order([a for a in library if triggerable(a, features)], rng)
    chosen: list[Atomic] = []
    for cat, quota in category_quotas(target).items():
        _fill([a for a in pool if a.category == cat and a not in chosen], chosen, quota, removed)
    _fill([a for a in pool if a not in chosen], chosen, target - len(chosen), removed)
    order = {c: i for i, c in enumerate(CATEGORIES)}
    return sorted(chosen, key=lambda a: order[a.category]), removed


# ---- optional LLM-assisted steps --------------------------------------------------------------------------


def _numbered(atomics: list[Atomic]) -> str:
    return "\n".join(f"[{i}] ({a.sub_dimension}) {a.instruction}" for i, a in enumerate(atomics))


def llm_conflict_check(atomics: list[Atomic], complete_json: CompleteJson) -> tuple[list[Atomic], str]:
    """Ask the model whether the set contradicts itself; keep the indices it returns."""
    prompt = (
        "You review instruction sets for a retrieval-augmented assistant. Decide whether any of the numbered "
        "instructions below contradict each other, so that no answer could satisfy all of them. When "
        "instructions clash, keep the ones that matter most for carrying out the task.\n\n"
        f"{_numbered(atomics)}\n\n"
        'Reply with JSON only: {"has_conflict": true|false, "reason": "<one sentence>", '
        '"keep": [indices of the instructions to keep]}'
    )
    reply = complete_json(prompt)
    keep = reply.get("keep")
    if not reply.get("has_conflict") or not isinstance(keep, list):
        return atomics, str(reply.get("reason", ""))
    valid = sorted({i for i in keep if isinstance(i, int) and 0 <= i < len(atomics)})
    return [atomics[i] for i in valid] or atomics, str(reply.get("reason", ""))


def llm_filter_untriggerable(atomics: list[Atomic], query: str, context: str,
                             complete_json: CompleteJson) -> list[Atomic]:
    """Ask the model which instructions the query and documents can never trigger, and drop them."""
    prompt = (
        "Some instructions only make sense when the question or the documents give occasion for them (for "
        "example a rule about citing statutes when no statute is present). Given the question and documents, "
        "list the numbered instructions that can never come into play.\n\n"
        f"Instructions:\n{_numbered(atomics)}\n\nQuestion: {query}\n\nDocuments:\n{context[:6000]}\n\n"
        'Reply with JSON only: {"remove": [indices], "reason": "<one sentence>"}'
    )
    drop = {i for i in complete_json(prompt).get("remove", []) if isinstance(i, int)}
    return [a for i, a in enumerate(atomics) if i not in drop]


def llm_augment(atomics: list[Atomic], query: str, context: str, complete_json: CompleteJson,
                max_new: int = 2) -> list[dict]:
    """Ask the model for up to `max_new` query-specific, LLM-judged constraints (validated records)."""
    from core.construction.library import CATEGORY_OF

    prompt = (
        "Propose at most two additional instructions that fit this particular question and its documents, "
        "that do not repeat or overlap the existing ones, that are general enough to read naturally, and that "
        "a judge could verify. Each needs a sub_dimension from: " + ", ".join(CATEGORY_OF) + ".\n\n"
        f"Existing instructions:\n{_numbered(atomics)}\n\nQuestion: {query}\n\nDocuments:\n{context[:6000]}\n\n"
        'Reply with JSON only: {"additional": [{"instruction": "...", "sub_dimension": "...", '
        '"criterion": "<what a judge checks>"}]}'
    )
    extra = []
    for item in complete_json(prompt).get("additional", [])[:max_new]:
        if isinstance(item, dict) and item.get("sub_dimension") in CATEGORY_OF and item.get("instruction") \
                and item.get("criterion"):
            extra.append(item)
    return extra


QUALITY_DIMENSIONS = ("logical_consistency", "feasibility", "realism", "evaluation_clarity", "complexity")


def llm_quality(constraints: list[ConstraintSpec], domain: str, complete_json: CompleteJson) -> dict:
    """Score the fused set 1-5 on the five quality dimensions; adds their mean as 'average'."""
    listing = "\n".join(f"- {c.text}" for c in constraints)
    prompt = (
        f"Rate this instruction set, written for an assistant that answers {domain} questions from retrieved "
        "documents, on a 1-5 scale for each of: logical_consistency (parts do not clash), feasibility (a "
        "strong model could satisfy all at once), realism (a plausible workplace request), evaluation_clarity "
        "(each part can be checked by a rule or a judge), complexity (demanding without being absurd).\n\n"
        f"{listing}\n\n"
        'Reply with JSON only: {"logical_consistency": n, "feasibility": n, "realism": n, '
        '"evaluation_clarity": n, "complexity": n, "remarks": "<one sentence>"}'
    )
    reply = complete_json(prompt)
    scores: dict[str, float] = {d: int(reply[d]) for d in QUALITY_DIMENSIONS if isinstance(reply.get(d), (int, float))}
    if scores:
        scores["average"] = round(sum(scores.values()) / len(scores), 2)
    return {**scores, "remarks": str(reply.get("remarks", ""))}


@dataclass
class FusionResult:
    """The fused constraint list with the provenance of every choice."""

    constraints: list[ConstraintSpec]
    atomic_ids: list[str]
    removed: list[tuple[str, str]] = field(default_factory=list)
    quality: dict | None = None


def fuse(library: list[Atomic], domain: str, features: set[str], rng: random.Random, query: str = "",
         context: str = "", complete_json: CompleteJson | None = None, augment: bool = False) -> FusionResult:
    """Fuse one instance's instruction set; the LLM steps run only when `complete_json` is given."""
    chosen, removed = sample_atomics(library, sample_target(domain, rng), features, rng)
    if complete_json:
        before = {a.id for a in chosen}
        chosen, _ = llm_conflict_check(chosen, complete_json)
        chosen = llm_filter_untriggerable(chosen, query, context, complete_json)
        removed += [(i, "removed by LLM review") for i in sorted(before - {a.id for a in chosen})]
    constraints = [a.to_constraint(f"c{i + 1}") for i, a in enumerate(chosen)]
    if complete_json and augment:
        for item in llm_augment(chosen, query, context, complete_json):
            constraints.append(Atomic(
                id="augmented", sub_dimension=item["sub_dimension"], instruction=item["instruction"],
                probability=1.0, generalization=False, judge_method="llm", criterion=item["criterion"],
            ).to_constraint(f"c{len(constraints) + 1}"))
    quality = llm_quality(constraints, domain, complete_json) if complete_json else None
    return FusionResult(constraints, [a.id for a in chosen], removed, quality)

