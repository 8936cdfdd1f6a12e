"""The one reading of document citation marks in an answer ('[3]', '[doc 3]', '[Document 3]'), shared by every
scorer that counts cited documents: a protocol's citation metrics and a rule checker's citation constraint."""

from __future__ import annotations

import re

CITATION_RE = re.compile(r"\[(\d+)")  # ALCE: re.findall(r"\[\d+", sent)
DOC_LABEL_RE = re.compile(r"\[doc(?:ument)?\s*(\d+)\]", re.IGNORECASE)  # '[doc 3]', '[Document 3]': read as '[3]'


def normalise_labels(text: str) -> str:
    """`text` with '[doc N]' / '[Document N]' (labels our prompts give documents) written '[N]'."""
    return DOC_LABEL_RE.sub(r"[\1]", text)


def cited_documents(text: str) -> list[int]:
    """The 1-based document numbers `text` cites, in order, repeats kept (ALCE's '[<digits>', document labels
    included)."""
    return [int(n) for n in CITATION_RE.findall(normalise_labels(text))]
