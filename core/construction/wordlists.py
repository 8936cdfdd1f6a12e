"""Word lists of the construction rules and checks, read from data/construction/<name>.<language>.json (knowledge in
data files, not code); a language without a file is refused with the languages that have one."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from core.config import REPO_ROOT

WORDLIST_DIR = REPO_ROOT / "data" / "construction"


def wordlist_languages(name: str, folder: Path = WORDLIST_DIR) -> list[str]:
    """The languages that have a `name` word-list file."""
    return sorted(p.name.split(".")[1] for p in folder.glob(f"{name}.*.json"))


@cache
def wordlists(name: str, language: str = "en", folder: Path = WORDLIST_DIR) -> dict[str, Any]:
    """The `name` word lists for `language`; ValueError naming the languages supported when it has none."""
    path = folder / f"{name}.{language}.json"
    if not path.is_file():
        raise ValueError(f"word lists {name!r} are unsupported for language {language!r}; "
                         f"known: {', '.join(wordlist_languages(name, folder)) or 'none'}")
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("language") != language:
        raise ValueError(f"{path}: tagged language {data.get('language')!r}, expected {language!r}")
    return data
