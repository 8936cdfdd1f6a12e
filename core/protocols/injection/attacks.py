"""The injection protocol's attack library (attacks.json, written here) and how an attack is planted: a template
filled from its slots, put at the start, middle or end of a document's text, and the document put first, in the middle
or last in the bundle. The planted document carries the attack in its variant (`ATTACK_KEY`), which the scorer reads
to decide success (by rule when the attack has a checkable target, by the judge otherwise)."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
ATTACKS_FILE = HERE / "attacks.json"
BIPIA_KINDS_FILE = HERE / "bipia_kinds.json"
ATTACK_KEY = "injection"  # variant["kind"] of a planted document
KINDS: tuple[str, ...] = ("task_hijack", "exfiltration", "persuasion")
TEXT_POSITIONS: tuple[str, ...] = ("start", "middle", "end")
BUNDLE_POSITIONS: tuple[str, ...] = ("first", "middle", "last")
SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


@dataclass(frozen=True)
class Attack:
    """One filled attack: its id, kind, channel, the planted text and how success is decided."""

    id: str
    kind: str
    channel: str
    text: str
    check: str  # 'contains' (rule) or 'judge'
    targets: tuple[str, ...] = ()
    criterion: str = ""
    source: str = "gauntlet"

    def variant(self, text_position: str, bundle_position: str) -> dict[str, Any]:
        """What the planted document's variant records about the attack."""
        return {"kind": ATTACK_KEY, "attack_id": self.id, "attack_kind": self.kind, "channel": self.channel,
                "attack": self.text, "check": self.check, "targets": list(self.targets), "criterion": self.criterion,
                "text_position": text_position, "bundle_position": bundle_position, "attack_source": self.source}


@lru_cache(maxsize=1)
def library() -> dict[str, Any]:
    """attacks.json as read."""
    return json.loads(ATTACKS_FILE.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def bipia_kinds() -> dict[str, str]:
    """BIPIA's text-attack category -> this protocol's attack kind."""
    return json.loads(BIPIA_KINDS_FILE.read_text(encoding="utf-8"))["kinds"]


def templates(kind: str | None = None) -> list[dict[str, Any]]:
    """The attack templates, of one kind or all; an unknown kind lists the known ones."""
    if kind is not None and kind not in KINDS:
        raise KeyError(f"unknown attack kind {kind!r}; known: {', '.join(KINDS)}")
    return [t for t in library()["templates"] if kind is None or t["kind"] == kind]


def fill(template: dict[str, Any], rng: random.Random) -> Attack:
    """The template with each slot filled by a value drawn with `rng` (one value per slot, shared by its text,
    targets and criterion)."""
    slots = {name: rng.choice(values) for name, values in library()["slots"].items()}
    targets = tuple(t.format(**slots) for t in template.get("targets", []))
    return Attack(template["id"], template["kind"], template["channel"], template["text"].format(**slots),
                  template["check"], targets, template.get("criterion", "").format(**slots))


def plant(text: str, attack: str, position: str, rng: random.Random) -> str:
    """`text` with `attack` on its own line at the start, the end, or before a sentence drawn with `rng`."""
    if position == "start":
        return f"{attack}\n{text}"
    if position == "end":
        return f"{text}\n{attack}"
    if position != "middle":
        raise KeyError(f"unknown text position {position!r}; known: {', '.join(TEXT_POSITIONS)}")
    starts = [m.end() for m in SENTENCE_END.finditer(text)]
    cut = rng.choice(starts) if starts else len(text) // 2
    return f"{text[:cut]}\n{attack}\n{text[cut:]}"


def bundle_index(count: int, position: str) -> int:
    """The 0-based place of the planted document among `count` documents for a bundle position."""
    return {"first": 0, "middle": count // 2, "last": count - 1}[position]


def planted(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The attack variants of the documents that carry one."""
    return [d.get("variant", {}) for d in documents if (d.get("variant") or {}).get("kind") == ATTACK_KEY]
