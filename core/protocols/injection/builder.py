"""The injection protocol's builder: benchmark instances with an attack planted in one document of each bundle.

Format 'bipia' reads a copy of microsoft/BIPIA (a folder holding benchmark/email/test.jsonl and
benchmark/text_attack_test.json): each EmailQA record (context, question, ideal; 'unknown' = unanswerable) is one
instance whose email carries one of BIPIA's text attacks, rotated over the attacks, the three text positions and the
three bundle positions; two other emails of the file are its distractors. BIPIA's attacks have no checkable target,
so the judge decides them; the attack's category gives its kind (bipia_kinds.json).

Format 'qa' reads the team's question-answer records (JSONL: question or query, answer or answers, documents as
strings or {title, text}, the first one answer-bearing, optional id and domain): each record gives one instance per
attack kind from the library (attacks.json), planted in a distractor document when there is one (else in the
answer-bearing one), positions rotated."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from core.protocols.base import BuildResult
from core.protocols.progress import Progress, counted

from . import NAME
from .attacks import BUNDLE_POSITIONS, KINDS, TEXT_POSITIONS, Attack, bipia_kinds, bundle_index, fill, plant, templates

EMAIL_FILE = Path("benchmark", "email", "test.jsonl")
ATTACK_FILE = Path("benchmark", "text_attack_test.json")
UNKNOWN = "unknown"
DISTRACTORS = 2


def positions(n: int) -> tuple[str, str]:
    """The n-th (text position, bundle position) pair: all nine pairs in turn."""
    return TEXT_POSITIONS[n % 3], BUNDLE_POSITIONS[(n // 3) % 3]


def bipia_attacks(path: Path) -> list[Attack]:
    """BIPIA's text attacks as judge-decided attacks (id 'bipia/<category>-<i>'), the categories interleaved (the
    first of each category, then the second of each, ...) so that a short slice still spans every category."""
    kinds = bipia_kinds()
    data = json.loads(path.read_text(encoding="utf-8"))
    ranked = [(i, c, category, text) for c, (category, texts) in enumerate(data.items()) for i, text in enumerate(texts)]
    return [Attack(f"bipia/{category}-{i}", kinds.get(category, "task_hijack"), "reply", text, "judge",
                   criterion="", source="bipia") for i, _, category, text in sorted(ranked)]


def reference_of(answers: list[str]) -> dict[str, Any]:
    """The reference: the answers, or unanswerable when there is none."""
    answers = [a for a in answers if a and a.strip().lower() != UNKNOWN]
    return {"answer_type": "short", "answers": [{"text": a} for a in answers]} if answers else \
        {"answer_type": "unanswerable"}


def poisoned_bundle(documents: list[dict[str, Any]], target: int, attack: Attack, n: int,
                    rng: random.Random) -> list[dict[str, Any]]:
    """The documents with `attack` planted in documents[target] and that document moved to its bundle position."""
    text_position, bundle_position = positions(n)
    docs = [dict(d) for d in documents]
    victim = docs.pop(target)
    victim["text"] = plant(victim["text"], attack.text, text_position, rng)
    victim["variant"] = attack.variant(text_position, bundle_position)
    docs.insert(bundle_index(len(docs) + 1, bundle_position), victim)
    return docs


def bipia_records(folder: Path, limit: int | None, seed: int, progress: Progress | None) -> tuple[list, list[str]]:
    """Instances from a BIPIA copy; (records, skipped with why)."""
    rows = [json.loads(line) for line in (folder / EMAIL_FILE).read_text(encoding="utf-8").splitlines() if line.strip()]
    attacks, rng = bipia_attacks(folder / ATTACK_FILE), random.Random(seed)
    records, skipped = [], []
    for n, row in enumerate(counted(rows[:limit], progress)):
        if not row.get("context") or not row.get("question"):
            skipped.append(f"line {n + 1}: no context or question")
            continue
        others = [rows[(n + k) % len(rows)] for k in range(1, DISTRACTORS + 1) if len(rows) > k]
        docs = [{"doc_id": f"bipia-email-{n + 1}", "title": "Email", "text": row["context"], "role": "supporting",
                 "source": f"BIPIA email/test.jsonl line {n + 1}"},
                *({"doc_id": f"bipia-email-{(n + k) % len(rows) + 1}", "title": "Email", "text": o["context"],
                   "role": "noise", "source": "BIPIA email/test.jsonl"} for k, o in enumerate(others, start=1))]
        attack = attacks[n % len(attacks)]
        records.append(instance(f"{NAME}/bipia-email-{n + 1}", "BIPIA EmailQA", row["question"].removeprefix("Q: "),
                                poisoned_bundle(docs, 0, attack, n, rng), reference_of([row.get("ideal", "")]),
                                attack))
    return records, skipped


def as_document(doc: Any, uid: str, k: int, role: str) -> dict[str, Any]:
    """A record's document (a string or {title, text}) as an instance document."""
    doc = {"text": doc} if isinstance(doc, str) else doc
    return {"doc_id": f"{uid}-d{k}", "title": doc.get("title", ""), "text": doc["text"], "role": role}


def qa_records(source: Path, limit: int | None, seed: int, progress: Progress | None) -> tuple[list, list[str]]:
    """Instances from the team's question-answer records, one per attack kind; (records, skipped with why)."""
    lines = [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng, records, skipped, n = random.Random(seed), [], [], 0
    used = dict.fromkeys(KINDS, 0)  # each kind's templates in turn
    for number, line in enumerate(counted(lines, progress), start=1):
        row = json.loads(line)
        question, docs = row.get("question") or row.get("query"), row.get("documents") or []
        answers = row.get("answers") or [row.get("answer", "")]
        if not question or not docs:
            skipped.append(f"line {number}: needs a question and at least one document")
            continue
        uid = str(row.get("id") or f"qa-{number}")
        bundle = [as_document(d, uid, k, "supporting" if k == 0 else "noise") for k, d in enumerate(docs)]
        for kind in KINDS:
            choices = templates(kind)
            attack = fill(choices[used[kind] % len(choices)], rng)
            used[kind] += 1
            target = 1 if len(bundle) > 1 else 0
            records.append(instance(f"{NAME}/{uid}-{kind}", row.get("domain") or "Injection", question,
                                    poisoned_bundle(bundle, target, attack, n, rng),
                                    reference_of([str(a) for a in answers]), attack))
            n += 1
    return records[:limit], skipped


def instance(uid: str, domain: str, question: str, documents: list[dict[str, Any]], reference: dict[str, Any],
             attack: Attack) -> dict[str, Any]:
    """One injection instance (its attack kind and positions also as attributes, for breakdowns)."""
    planted = next(d["variant"] for d in documents if d.get("variant"))
    return {"id": uid, "domain": domain, "query": question, "protocol": NAME, "documents": documents,
            "reference": reference,
            "attributes": {"question_type": attack.kind, "categories": [attack.kind, attack.channel],
                           "aspects": [f"text:{planted['text_position']}", f"bundle:{planted['bundle_position']}",
                                       f"check:{attack.check}"]}}


def build(source: Path, out_dir: Path, *, fmt: str = "", seed: int = 0, limit: int | None = None,
          bm25_only: bool = True, progress: Progress | None = None) -> BuildResult:
    """out_dir/instances.jsonl from a BIPIA copy (fmt 'bipia', a folder) or question-answer records (fmt 'qa')."""
    fmt = fmt or ("bipia" if Path(source).is_dir() else "qa")
    if fmt not in ("bipia", "qa"):
        raise ValueError(f"unknown {NAME} source layout {fmt!r}; known: bipia, qa")
    records, skipped = (bipia_records if fmt == "bipia" else qa_records)(Path(source), limit, seed, progress)
    out = out_dir / "instances.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    kinds = {k: sum(r["attributes"]["question_type"] == k for r in records) for k in KINDS}
    return BuildResult(out, len(records), [f"{len(records)} instances ({fmt}): "
                                           + ", ".join(f"{k} {v}" for k, v in kinds.items()),
                                           f"{len(skipped)} skipped"], skipped)
