"""Which language a text is in: script-based for Chinese and Japanese, the langdetect port for the rest."""

from __future__ import annotations

import re
from functools import lru_cache

CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")
KANA_RE = re.compile(r"[\u3040-\u30ff\uff66-\uff9f]")
HANGUL_RE = re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")
LETTER_RE = re.compile(r"[^\W\d_]", re.UNICODE)
CJK_SHARE = 0.5
CJK_LANGUAGES = ("zh", "ja")


@lru_cache(maxsize=4096)
def cjk_language(text: str) -> str | None:
    """'ja' or 'zh' when most letters of `text` are Chinese / Japanese script (kana marks Japanese), else None."""
    letters = LETTER_RE.findall(text or "")
    cjk = [ch for ch in letters if CJK_RE.match(ch)]
    if not letters or len(cjk) < CJK_SHARE * len(letters):
        return None
    return "ja" if any(KANA_RE.match(ch) for ch in cjk) else "zh"


def detect_language(text: str) -> str:
    """A BCP-47 primary tag for `text` ('en', 'zh', 'ja', ...), or 'und' when it cannot be told."""
    cjk = cjk_language(text)
    if cjk:
        return cjk
    letters = LETTER_RE.findall(text or "")
    if letters and sum(bool(HANGUL_RE.match(ch)) for ch in letters) >= CJK_SHARE * len(letters):
        return "ko"
    from core.scoring.checkers.langid import detect_language as langdetect  # lazy: loads profiles and kernels

    found = langdetect(text) if letters else None
    return (found or "und").split("-")[0].lower() if found not in ("zh-cn", "zh-tw") else "zh"
