"""Token counts for run estimates, without a tokenizer.

The approximation: every character of a wide script (Chinese Han, Japanese kana, Korean Hangul, CJK and full-width
punctuation) is about one token, because the BPE vocabularies of current models (OpenAI's cl100k / o200k, Anthropic's,
Qwen's) encode a common Han or kana character as one token, a rare one as two or three and a few frequent pairs as
one; everything else is about four characters per token, the usual rule for English and other Latin-script text
(the rule `core.generation.llm.estimate_tokens` applies to all text). A text counts at least one token. Estimates
are for budgets, not bills: providers report the true counts, and rare characters make Chinese run up to ~2x higher.
"""

from __future__ import annotations

import re

CHARS_PER_TOKEN = 4
WIDE_RE = re.compile(r"[\u1100-\u11ff\u3000-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
                     r"\uff00-\uffef]")


def count_tokens(text: str) -> int:
    """Approximate tokens of `text`: one per wide-script character, one per four other characters, at least one."""
    text = text or ""
    wide = 0 if text.isascii() else len(WIDE_RE.findall(text))
    return max(1, wide + (len(text) - wide) // CHARS_PER_TOKEN)
