"""The conversation protocol's builder: one instance per conversation turn, its earlier turns as the history.

Format 'mtrag' reads MTRAG-UN's generation tasks (IBM/mt-rag-benchmark, mtragun-human/generation_tasks/reference.jsonl
at cc5b1d4; the user's copy, never bundled): each task is one turn with every earlier turn in `input` (user and agent),
its passages in `contexts`, the reference answer in `targets`, its `answerability`, `Question Type`, `Multi-Turn` type
and `Collection`. Format 'turns' reads the team's own conversations: {"conversation_id", "domain", "turns": [{"user",
"assistant" (the reference answer), "documents" (strings or {title, text}), "answerability", "question_type"}]}."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.protocols.base import BuildResult
from core.protocols.progress import Progress, counted

from . import ANSWERABILITY, NAME
from .builder_traces import FORMATS as TRACE_FORMATS
from .builder_traces import trace_records
from .builder_turns import turn_instance

MTRAG_LANGUAGE = "en"  # MTRAG-UN's conversations are English (short turns are too short to detect reliably)
SPEAKERS = {"user": "user", "agent": "assistant", "assistant": "assistant"}
SOURCE_FORMATS = ("mtrag", "turns", "otel", "openinference", "langfuse", "phoenix")  # the last four: trace formats


def mtrag_instance(row: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """One MTRAG-UN task as an instance, or None with why."""
    turns = row.get("input") or []
    if not turns or turns[-1].get("speaker") != "user":
        return None, "its input does not end on a user turn"
    label = next(iter(row.get("answerability") or []), "")
    if label not in ANSWERABILITY:
        return None, f"answerability {label!r} is not one of {', '.join(ANSWERABILITY)}"
    history = [{"role": SPEAKERS[t["speaker"]], "content": t["text"]} for t in turns[:-1] if t.get("text")]
    target = next((t.get("text", "") for t in row.get("targets") or []), "")
    documents = [{"doc_id": c["document_id"], "text": c.get("text", ""), "title": c.get("title", "")}
                 for c in row.get("contexts") or []]
    kinds = [m for m in row.get("Multi-Turn") or [] if m != "N/A"]
    uid = f"{NAME}/mtrag/{row['task_id'].replace('<::>', '/t')}"
    return turn_instance(uid, f"mtRAG {row.get('Collection', '')}".strip(), turns[-1]["text"], history, documents,
                         label, int(row["turn"]), "+".join(row.get("Question Type") or []) or "unknown", kinds,
                         target, [f"collection:{row.get('Collection', '')}"], MTRAG_LANGUAGE), ""


def mtrag_records(source: Path, limit: int | None, progress: Progress | None) -> tuple[list, list[str]]:
    """Instances from MTRAG-UN generation tasks; (records, skipped with why)."""
    lines = [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()][:limit]
    records, skipped = [], []
    for number, line in enumerate(counted(lines, progress), start=1):
        record, why = mtrag_instance(json.loads(line))
        if record is None:
            skipped.append(f"line {number}: {why}")
        else:
            records.append(record)
    return records, skipped


def team_records(source: Path, limit: int | None, progress: Progress | None) -> tuple[list, list[str]]:
    """Instances from the team's conversations, one per turn; (records, skipped with why)."""
    lines = [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    records, skipped = [], []
    for number, line in enumerate(counted(lines, progress), start=1):
        conv = json.loads(line)
        cid, history = conv.get("conversation_id") or f"c{number}", list[dict[str, str]]()
        for turn, t in enumerate(conv.get("turns") or [], start=1):
            label = t.get("answerability", "ANSWERABLE")
            if not t.get("user") or label not in ANSWERABILITY:
                skipped.append(f"line {number} turn {turn}: needs a user text and an answerability of "
                               f"{', '.join(ANSWERABILITY)}")
                break
            docs = [{"doc_id": f"{cid}-t{turn}-d{k}", **({"text": d} if isinstance(d, str) else d)}
                    for k, d in enumerate(t.get("documents") or [])]
            records.append(turn_instance(f"{NAME}/{cid}/t{turn}", conv.get("domain") or "Conversations", t["user"],
                                         list(history), docs, label, turn, t.get("question_type", "unknown"),
                                         [t["multi_turn"]] if t.get("multi_turn") else [], t.get("assistant", ""), [],
                                         conv.get("language")))
            history += [{"role": "user", "content": t["user"]}, {"role": "assistant", "content": t.get("assistant", "")}]
    return records[:limit], skipped


def build(source: Path, out_dir: Path, *, fmt: str = "", seed: int = 0, limit: int | None = None,
          bm25_only: bool = True, progress: Progress | None = None) -> BuildResult:
    """out_dir/instances.jsonl from MTRAG-UN generation tasks (fmt 'mtrag'), the team's conversations ('turns') or
    its production traces (a trace format: otel, openinference, langfuse, phoenix; builder_traces)."""
    fmt = fmt or "mtrag"
    if fmt not in SOURCE_FORMATS:
        raise ValueError(f"unknown {NAME} source layout {fmt!r}; known: {', '.join(SOURCE_FORMATS)}")
    extra: list[str] = []
    if fmt in TRACE_FORMATS:
        records, skipped, made = trace_records(Path(source), fmt, limit, progress)
        extra = [made]
    else:
        records, skipped = (mtrag_records if fmt == "mtrag" else team_records)(Path(source), limit, progress)
    out = out_dir / "instances.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    labels = {k: sum(k in r["attributes"]["categories"] for r in records) for k in ANSWERABILITY}
    return BuildResult(out, len(records), [f"{len(records)} turns ({fmt}): "
                                           + ", ".join(f"{k.lower()} {v}" for k, v in labels.items()),
                                           *extra, f"{len(skipped)} skipped"], skipped)


NON_IDEAL = ("noisy", "gap", "conflict")


def non_ideal_turn(record: dict[str, Any], mode: str, others: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A copy of one turn made non-ideal (id '<id>/<mode>', `mode` set), or None when it cannot be: 'gap' drops its
    answer-bearing passages (the turn becomes unanswerable); 'noisy' adds the passages of other conversations' turns as
    noise; 'conflict' adds a copy of its first passage with one key fact edited (core.construction.simulate's
    make_conflict, the conflict builder of the instance pipeline)."""
    from core.construction.corpus import CorpusDoc
    from core.construction.simulate import make_conflict

    docs = [dict(d) for d in record["documents"]]
    out = {**record, "id": f"{record['id']}/{mode}", "mode": mode,
           "attributes": {**record["attributes"], "aspects": [*record["attributes"]["aspects"], f"non_ideal:{mode}"]}}
    if mode == "gap":
        kept = [d for d in docs if d["role"] == "noise"]
        labels = [c for c in record["attributes"]["categories"] if c not in ANSWERABILITY]
        target = ((record.get("reference") or {}).get("answers") or [{"text": ""}])[0]["text"]
        return {**out, "documents": kept, "reference": {"answer_type": "unanswerable", "reasoning": target},
                "attributes": {**out["attributes"], "categories": ["UNANSWERABLE", *labels]}}
    if mode == "noisy":
        noise = [{**d, "doc_id": f"{d['doc_id']}~noise", "role": "noise"} for o in others for d in o["documents"]
                 if o["id"].rsplit("/", 1)[0] != record["id"].rsplit("/", 1)[0]][:3]
        return {**out, "documents": [*docs, *noise]} if noise else None
    if mode == "conflict" and docs:
        first = docs[0]
        made = make_conflict(CorpusDoc(first["doc_id"], record["domain"], first.get("title", ""), first["text"]),
                             [], f"{record['id']}-conflict")
        if made is None:
            return None
        return {**out, "documents": [*docs, made[0].model_dump(exclude_defaults=True)]}
    raise ValueError(f"unknown non-ideal mode {mode!r}; known: {', '.join(NON_IDEAL)}")


def with_non_ideal_turn(records: list[dict[str, Any]], turn: int, mode: str) -> tuple[list[dict[str, Any]], list[str]]:
    """`records` plus, for each conversation, a non-ideal copy of its turn `turn` (non_ideal_turn); the turns that
    could not be made so, with why."""
    added, skipped = [], []
    for record in records:
        if f"turn:{turn}" not in record["attributes"]["aspects"]:
            continue
        made = non_ideal_turn(record, mode, records)
        if made is None:
            skipped.append(f"{record['id']}: no {mode} version (no passage or no editable fact)")
        else:
            added.append(made)
    return [*records, *added], skipped
