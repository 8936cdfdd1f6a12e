"""The answer-reading corpus: the hand-written rows of tests/fixtures/answer_reading/*.jsonl and the rows expanded from
templates.yaml (each template once per letter / polarity, its intended reading filled in the same way as its text)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import yaml

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "answer_reading"
LETTERS = ["A", "B", "C", "D"]
POLARITY_WORDS = {"en": {"yes": "Yes", "no": "No"}, "zh": {"yes": "是", "no": "否"}, "ja": {"yes": "はい", "no": "いいえ"}}


@cache
def rows(name: str) -> tuple[dict, ...]:
    """The hand-written rows of one corpus file."""
    return tuple(json.loads(line) for line in (CORPUS / name).read_text(encoding="utf-8").splitlines() if line)


@cache
def templates() -> dict:
    return yaml.safe_load((CORPUS / "templates.yaml").read_text(encoding="utf-8"))


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


@cache
def mcq_rows() -> tuple[dict, ...]:
    """Hand-written MCQ rows and the template rows (X in A..D, Y the next letter)."""
    out = list(rows("mcq.jsonl"))
    for t in templates()["mcq"]:
        for i, x in enumerate(LETTERS):
            y = LETTERS[(i + 1) % len(LETTERS)]
            out.append({"text": _fill(t["text"], {"X": x, "Y": y, "x": x.lower()}), "language": t["language"],
                        "style": t["style"], "options": LETTERS, "intended": x if t["intended"] == "X" else None,
                        "set": "templates"})
    return tuple(out)


@cache
def yesno_rows() -> tuple[dict, ...]:
    """Hand-written yes/no rows and the template rows (both polarities; a template without {P} once)."""
    out = list(rows("yesno.jsonl"))
    for t in templates()["yesno"]:
        words = POLARITY_WORDS[t["language"]]
        polarities = ("yes", "no") if "{P}" in t["text"] or "{p}" in t["text"] else ("none",)
        for polarity in polarities:
            word = words.get(polarity, "")
            out.append({"text": _fill(t["text"], {"P": word, "p": word.lower()}), "language": t["language"],
                        "style": t["style"], "intended": polarity if t["intended"] == "P" else None})
    return tuple(out)
