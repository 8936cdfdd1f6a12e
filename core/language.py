"""Which language a text is in (script-based for Chinese and Japanese, the langdetect port for the rest), and the
shared Chinese / Japanese text units: content-character terms and sentence ends."""

from __future__ import annotations

import itertools
import json
import re
import sys
import threading
from functools import cache, lru_cache
from pathlib import Path

CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")
KANA_RE = re.compile(r"[\u3040-\u30ff\uff66-\uff9f]")
HANGUL_RE = re.compile(r"[\uac00-\ud7af\u1100-\u11ff]")
LETTER_RE = re.compile(r"[^\W\d_]", re.UNICODE)
NON_CJK_WORD_RE = re.compile(r"[^\W\d_\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]+")
CJK_SHARE = 0.5
CJK_LANGUAGES = ("zh", "ja")
# Where a Chinese / Japanese sentence ends (zero width, no space needed): after 。！？, after a closing quote that
# follows one unless a particle (hiragana) continues the sentence, and after ! or ? directly followed by Han or kana.
CJK_SENTENCE_BREAK = (r"(?<=[。！？])(?![」』）”’])|(?<=[。！？][」』）”’])(?![\u3040-\u309f])"
                      r"|(?<=[!?])(?=[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff])")
# Function words and question words that carry no content: Chinese (no kana in the text) and Japanese (hiragana are
# grammar and split terms anyway; these are the kanji ones).
ZH_STOP_RE = re.compile(
    "为什么|什么|多少|多久|哪些|哪个|哪里|怎么|怎样|如何|是否|何时|有没有|"
    "[的了是在和与及或也就都而但并把被对从向为以于之其这那此个些我你您他她它们吗呢吧啊么着过将会能可要有没不无很更"
    "最再又还即所等如请该每各哪何谁几]"
)
JA_STOP_RE = re.compile("[何等各]")
CONTENT_RUN_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u30a1-\u30fa\u30fc\uff66-\uff9f]+")
# Detections a process answers with langdetect itself (about 3 ms each, nothing to load but its profiles) before
# the compiled port takes over (about 0.05 ms each, after about 0.7 s of CPU to import numba and load its kernels).
COMPILED_AFTER = 200
_detections = itertools.count()
_FACTORY_LOCK = threading.Lock()
_COMPILED_PORT = "core.langid"


@lru_cache(maxsize=4096)
def cjk_language(text: str) -> str | None:
    """'ja' or 'zh' when most units of `text` are Chinese / Japanese characters (kana marks Japanese), else None.

    A unit is a Chinese / Japanese character or a word of another script, so Latin brand names inside a Chinese
    question ('iPhone SE 3的起售价是多少？') weigh as the words they are, not letter by letter."""
    cjk = CJK_RE.findall(text or "")
    words = NON_CJK_WORD_RE.findall(text or "")
    if not cjk or len(cjk) < CJK_SHARE * (len(cjk) + len(words)):
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
    found = langdetect_language(text) if letters else None
    return (found or "und").split("-")[0].lower() if found not in ("zh-cn", "zh-tw") else "zh"


def cjk_terms(text: str) -> list[str]:
    """Content terms of the Chinese / Japanese script in `text`: character bigrams of each run of Han or katakana
    characters once function and question words are taken out (a lone character stands for itself); hiragana,
    punctuation and Latin text split runs and give no terms."""
    stop = JA_STOP_RE if KANA_RE.search(text or "") else ZH_STOP_RE
    runs = CONTENT_RUN_RE.findall(stop.sub(" ", text or ""))
    return [run[i : i + 2] for run in runs for i in range(max(1, len(run) - 1))]


def langdetect_language(text: str) -> str | None:
    """langdetect's answer for `text` (seed 0), None when the text has no features: from langdetect itself for a
    process's first COMPILED_AFTER detections, from the compiled port (core.langid) after them or
    once something else imported it."""
    if _COMPILED_PORT in sys.modules or next(_detections) >= COMPILED_AFTER:
        from core.langid import detect_language

        return detect_language(text)
    return langdetect_itself(text)


def langdetect_itself(text: str) -> str | None:
    """langdetect.detect(text) with DetectorFactory.seed = 0, None when the text has no features."""
    from langdetect import DetectorFactory, detector_factory
    from langdetect.lang_detect_exception import LangDetectException

    with _FACTORY_LOCK:
        DetectorFactory.seed = 0
        detector_factory.init_factory()
    detector = detector_factory._factory.create()
    detector.append(text)
    try:
        return detector.detect()
    except LangDetectException:
        return None


WORDLIST_DIR = Path(__file__).resolve().parents[1] / "data" / "wordlists"


def wordlist_languages(name: str, folder: Path = WORDLIST_DIR) -> list[str]:
    """The languages that have a `name` word-list file (data/wordlists/<name>.<language>.json)."""
    return sorted(p.name.split(".")[1] for p in folder.glob(f"{name}.*.json"))


@cache
def wordlists(name: str, language: str = "en", folder: Path = WORDLIST_DIR) -> dict:
    """The `name` word lists for `language` (knowledge in data files, not code); ValueError naming the languages
    supported when it has none."""
    path = folder / f"{name}.{language}.json"
    if not path.is_file():
        raise ValueError(f"word lists {name!r} are unsupported for language {language!r}; "
                         f"known: {', '.join(wordlist_languages(name, folder)) or 'none'}")
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("language") != language:
        raise ValueError(f"{path}: tagged language {data.get('language')!r}, expected {language!r}")
    return data
