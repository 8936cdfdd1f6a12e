"""Prompts never contradict the instance: the reference prompt's fixed wording (short answers, the question's
language) yields to the instance's own instructions on length, format and language; instances without such
instructions keep today's prompts byte for byte (a golden file)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from core.ingest.importers import get_importer
from core.protocols import get_protocol
from core.protocols.prompting import REFERENCE_LINES, DocumentView, InstanceView

REFERENCE = get_protocol("reference_qa")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden" / "reference_prompts.json"
NO_INSTRUCTIONS = [("crag", "crag.jsonl"), ("ramdocs", "ramdocs.jsonl"), ("rgb", "rgb_en.json"),
                   ("rgb", "rgb_en_fact.json"), ("rgb", "rgb_zh_int.json")]


def _view(spec, constraints=()) -> tuple[InstanceView, list[DocumentView]]:
    documents = [DocumentView(doc_uid=d.doc_id, position=i, title=d.title or "", text=d.text, role=d.role,
                              content_type=d.content_type, variant=d.variant) for i, d in enumerate(spec.documents)]
    view = InstanceView(query=spec.query, protocol=spec.protocol, language=spec.language, constraints=constraints,
                        reference=spec.reference.model_dump() if spec.reference else None,
                        attributes=spec.attributes.model_dump(exclude_none=True))
    return view, documents


def _prompts() -> dict[str, str]:
    """sha256 of every message of every fixture instance without instructions, under every reference condition."""
    out = {}
    for fmt, name in NO_INSTRUCTIONS:
        parsed = get_importer(fmt).parse(FIXTURES / name)
        assert parsed.ok, parsed.errors[:3]
        for index, (_, spec) in enumerate(parsed.instances):
            assert not spec.constraints
            view, documents = _view(spec)
            for condition in REFERENCE.condition_names():
                messages, _ = REFERENCE.prompt(view, documents, condition, seed=7)
                text = json.dumps([[m.role, m.content] for m in messages], ensure_ascii=False)
                out[f"{name}[{index}]|{condition}"] = hashlib.sha256(text.encode()).hexdigest()
    return out


def test_prompts_of_instances_without_instructions_are_byte_identical_to_the_golden_file() -> None:
    prompts = _prompts()
    if os.environ.get("GAUNTLET_WRITE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(prompts, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert prompts == json.loads(GOLDEN.read_text(encoding="utf-8"))


# Four records of FollowRAG's published followRAG_ifnq.json (github.com/dongguanting/FollowRAG, commit
# aa50bb823150b8225b05d32d0077d81411fdceb8), keys 15, 30, 12 and 2, as published.
PUBLISHED = Path(__file__).resolve().parents[1] / "fixtures" / "followrag_ifnq_instructions.json"


def _published(key: int):
    parsed = get_importer("followrag").parse(PUBLISHED)
    assert parsed.ok, parsed.errors[:3]
    return next(spec for _, spec in parsed.instances if spec.id.endswith(f"/{key}"))


@pytest.mark.parametrize(
    ("key", "short_kept", "language_kept"),
    [
        pytest.param(15, False, True, id="two-paragraphs"),
        pytest.param(30, False, True, id="at-least-500-words-two-paragraphs-repeat"),
        pytest.param(12, True, False, id="entirely-in-persian"),
        pytest.param(2, True, True, id="quotes-and-no-commas-only"),
    ],
)
def test_the_fixed_wording_yields_to_the_records_own_instructions(key: int, short_kept: bool,
                                                                  language_kept: bool) -> None:
    spec = _published(key)
    view, documents = _view(spec, tuple(spec.constraints))
    for condition in ("", "closed_book"):
        system = REFERENCE.prompt(view, documents, condition)[0][0].content
        assert (REFERENCE_LINES["short"] in system) is short_kept, system
        assert (REFERENCE_LINES["language"] in system) is language_kept, system
        assert (REFERENCE_LINES["instructions"] in system) is not (short_kept and language_kept), system


def test_the_same_record_without_its_instructions_keeps_the_fixed_wording() -> None:
    spec = _published(30)
    system = REFERENCE.prompt(*_view(spec))[0][0].content
    assert REFERENCE_LINES["short"] in system and REFERENCE_LINES["language"] in system
    assert REFERENCE_LINES["instructions"] not in system


def test_a_run_reads_the_instructions_its_prompt_yields_to_from_the_database(engine) -> None:
    from sqlmodel import Session, select

    from core.generation.run_prompts import load_prompts
    from core.ingest.importers import import_source
    from core.store.models import Instance

    assert import_source(engine, PUBLISHED, fmt="followrag").ok
    with Session(engine) as session:
        ids = dict(session.exec(select(Instance.uid, Instance.id)).all())
        prompts = load_prompts(session, list(ids.values()), "stored", 0)
    systems = {uid: prompts[iid][0][0].content for uid, iid in ids.items()}
    assert REFERENCE_LINES["short"] not in systems["followrag/ifnq/15"]
    assert REFERENCE_LINES["language"] not in systems["followrag/ifnq/12"]
    assert REFERENCE_LINES["short"] in systems["followrag/ifnq/2"]
