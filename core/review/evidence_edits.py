"""What an expert verifying a built item needs beside the bundle: the clean and the edited evidence side by side with
the edit's span, and the automatic checks' verdicts and reasons stored on the item.

Any builder that edits evidence records, on each evidence document's `variant`, `evidence` ("clean" for the original
passage, anything else for an edited one) and `edit` ({start, end, before, after}: the span in that document's text
and the text before / after the edit), as the misleading-evidence builder does. The checks are read from the item's
metadata: `rag_stress.checks` or a builder's own top-level `checks`, each {passed, reason, by}.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.store.sanitize import highlighted_markdown

if TYPE_CHECKING:
    from core.store.models import Document

CLEAN = "clean"


@dataclass(frozen=True)
class MarkedText:
    """One evidence passage split at its edit: text before, the edited span, text after, and (edited side) the text
    the span replaced."""

    title: str
    before: str
    span: str
    after: str
    replaced: str = ""

    def markdown(self) -> str:
        """The passage as inert Markdown: untrusted text escaped, the span in <mark>, the replaced text in <del>."""
        return highlighted_markdown(self.before, self.span, self.after, self.replaced)


@dataclass(frozen=True)
class EvidencePair:
    """The original passage and one edited passage of a built item."""

    clean: MarkedText
    edited: MarkedText
    variants: int  # how many edited documents the item holds (e.g. one per position)


@dataclass(frozen=True)
class CheckVerdict:
    """One automatic check's verdict on a built item."""

    name: str
    passed: bool
    reason: str
    by: str


def _split(document: Document, clean: bool) -> MarkedText | None:
    edit = (document.variant or {}).get("edit")
    if not isinstance(edit, Mapping):
        return None
    text = document.text or ""
    start, end = int(edit.get("start", 0)), int(edit.get("end", 0))
    if not 0 <= start <= end <= len(text):
        return None
    wide_start, wide_end = _word_bounds(text, start, end)
    title = "Original passage" if clean else "Edited passage" + (
        f" ({document.variant['position']})" if document.variant.get("position") else "")
    replaced = "" if clean else text[wide_start:start] + str(edit.get("before", "")) + text[end:wide_end]
    return MarkedText(title, text[:wide_start], text[wide_start:wide_end], text[wide_end:], replaced)


def _word_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """The edit's span widened to whole words (an edit of '87' in '1887' highlights '1887'); the text outside the
    span is the same in the clean and the edited passage, so the replaced text widens by the same characters."""
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    return start, end


def evidence_pair(documents: Sequence[Document]) -> EvidencePair | None:
    """The clean and the first edited evidence document of an item, split at the edit; None when the item records
    no edit (a bundle built without editing evidence)."""
    edited = [d for d in documents if (d.variant or {}).get("evidence") not in (None, CLEAN) and "edit" in d.variant]
    clean = next((d for d in documents if (d.variant or {}).get("evidence") == CLEAN and "edit" in d.variant), None)
    if clean is None or not edited:
        return None
    left, right = _split(clean, True), _split(edited[0], False)
    return EvidencePair(left, right, len(edited)) if left and right else None


def automatic_checks(meta: Mapping[str, Any] | None) -> list[CheckVerdict]:
    """The automatic checks stored on a built item, in stored order ([] when it carries none)."""
    meta = meta or {}
    checks = (meta.get("rag_stress") or {}).get("checks") or meta.get("checks") or {}
    return [CheckVerdict(str(name), bool(v.get("passed")), str(v.get("reason", "")), str(v.get("by", "")))
            for name, v in checks.items() if isinstance(v, Mapping)]
