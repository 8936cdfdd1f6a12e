"""Conversations from production traces (issue 44): each trace format `gauntlet import` reads, grouped by session id
and ordered by start time, each turn with the conversation so far (the deployed answers) as its history; the
published trace files the importer is tested on (tests/fixtures/traces/README.md names repository and commit) and
our multi-turn files in the same formats; personal data redacted; one turn made non-ideal; the CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from core.cli import app
from core.ingest.importers.traces import trace_formats
from core.ingest.io import validate_lines
from core.protocols.conversation.builder import SOURCE_FORMATS, build, with_non_ideal_turn
from core.services.protocol_builds import build_tabs
from core.store.models import Instance
from tests.workspace_factories import principal, seeded_db

REPO = Path(__file__).resolve().parents[2]
OURS = REPO / "tests" / "fixtures" / "conversation"
PUBLISHED = REPO / "tests" / "fixtures" / "traces"
PLANS = ["What storage does the basic plan include?", "And can I add more storage to it?",
         "How much does each pack cost? My email is [EMAIL]."]


def built(tmp_path: Path, source: Path, fmt: str) -> tuple[list[dict], list[str], list[str]]:
    result = build(source, tmp_path / fmt, fmt=fmt)
    records = [json.loads(line) for line in result.out.read_text(encoding="utf-8").splitlines()]
    assert validate_lines(result.out.read_bytes()).ok
    return records, result.summary, result.skipped


def by_conversation(records: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in records:
        out.setdefault(r["metadata"]["trace"]["conversation"], []).append(r)
    return out


MULTI_TURN = [  # file, format, the session field it carries
    pytest.param("traces_otel.json", "otel", id="otel-gen_ai.conversation.id"),
    pytest.param("traces_openinference.jsonl", "openinference", id="openinference-session.id"),
    pytest.param("traces_phoenix.jsonl", "phoenix", id="phoenix-nested-session.id"),
    pytest.param("traces_langfuse.jsonl", "langfuse", id="langfuse-sessionId"),
]


@pytest.mark.parametrize(("name", "fmt"), MULTI_TURN)
def test_sessions_become_conversations_in_turn_order(tmp_path, monkeypatch, name, fmt) -> None:
    monkeypatch.setenv("GAUNTLET_REDACTION_KEY", "test-key")
    records, summary, skipped = built(tmp_path, OURS / name, fmt)
    conversations = sorted(by_conversation(records).values(), key=len, reverse=True)
    assert [len(c) for c in conversations] == [3, 1] and skipped == []
    plans = conversations[0]  # the file lists turn 2 first: the start time orders them
    assert [r["query"] for r in plans] == PLANS
    assert [r["attributes"]["aspects"][0] for r in plans] == ["turn:1", "turn:2", "turn:3"]
    assert plans[2]["attributes"]["history"] == [
        {"role": "user", "content": PLANS[0]}, {"role": "assistant", "content": "The basic plan includes 50 gigabytes."},
        {"role": "user", "content": PLANS[1]},
        {"role": "assistant", "content": "Yes: extra storage comes in 100 gigabyte packs."}]
    assert [len(r["documents"]) for r in plans] == [1, 2, 1] and "reference" not in plans[0]
    assert plans[2]["metadata"]["trace"]["deployed_answer"] == "Each pack costs 2 euros a month."
    assert "s-plans" not in json.dumps(records) and "ana@example.org" not in json.dumps(records)
    assert "2 conversations from 4 traces (1 of more than one turn, longest 3); redacted 1 email(s)" in summary[1]


def test_a_langfuse_api_listing_keeps_its_sessions(tmp_path, monkeypatch) -> None:
    """The public API's GET /traces answer ({"data": [trace objects holding their observations]}) gives the same
    conversations as the per-line export."""
    monkeypatch.setenv("GAUNTLET_REDACTION_KEY", "test-key")
    lines = [json.loads(line) for line in (OURS / "traces_langfuse.jsonl").read_text(encoding="utf-8").splitlines()]
    listing = tmp_path / "listing.json"
    listing.write_text(json.dumps({"data": [{**r["trace"], "observations": r["observations"]} for r in lines],
                                   "meta": {"page": 1}}), encoding="utf-8")
    records, _, skipped = built(tmp_path, listing, "langfuse")
    assert skipped == [] and sorted(len(c) for c in by_conversation(records).values()) == [1, 3]
    assert [r["query"] for r in records[:3]] == PLANS


def test_the_session_pseudonym_is_stable_under_one_key(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GAUNTLET_REDACTION_KEY", "test-key")
    ids = [sorted(by_conversation(built(tmp_path / str(k), OURS / "traces_openinference.jsonl", "openinference")[0]))
           for k in range(2)]
    assert ids[0] == ids[1] and all(i.startswith("session-") for i in ids[0])


PUBLISHED_FILES = [  # file, format, (conversations, turns), its session: the published files hold one turn each
    pytest.param("langfuse_llamaindex-2025-06-05.json", "langfuse", (1, 1), "What is Langfuse?", id="langfuse-seeder"),
    pytest.param("phoenix_llama_index_rag_spans.jsonl", "phoenix", (1, 1),
                 "How do I use the SDK to upload a ranking model?", id="phoenix-llama-index"),
    pytest.param("otel_langwatch_openai_requests.jsonl", "otel", (2, 2), "hi", id="otel-langwatch"),
    pytest.param("openinference_spec_traces.jsonl", "openinference", (1, 1), None, id="openinference-spec"),
]


@pytest.mark.parametrize(("name", "fmt", "counts", "first"), PUBLISHED_FILES)
def test_published_trace_files(tmp_path, name, fmt, counts, first) -> None:
    records, _, skipped = built(tmp_path, PUBLISHED / name, fmt)
    assert (len(by_conversation(records)), len(records)) == counts and skipped == []
    if first is not None:
        assert records[0]["query"] == first
    assert all(r["attributes"]["history"] == [] and "turn:1" in r["attributes"]["aspects"] for r in records)


def test_an_unassemblable_trace_is_skipped_with_where(tmp_path) -> None:
    records, _, skipped = built(tmp_path, PUBLISHED / "otel_example_trace.json", "otel")
    assert records == [] and len(skipped) == 2 and skipped[0].startswith("otel_example_trace.json:31: input.value")


NON_IDEAL = [  # mode -> the non-ideal copy of turn 2: its answerability, documents by role
    pytest.param("gap", "UNANSWERABLE", {}, id="gap"),
    pytest.param("noisy", "ANSWERABLE", {"supporting": 2, "noise": 1}, id="noisy"),  # the lone trace's passage
    pytest.param("conflict", "ANSWERABLE", {"supporting": 2, "conflicting": 1}, id="conflict"),  # 100 -> 125 gigabytes
]


@pytest.mark.parametrize(("mode", "label", "roles"), NON_IDEAL)
def test_one_production_turn_made_non_ideal(tmp_path, mode, label, roles) -> None:
    records, _, _ = built(tmp_path, OURS / "traces_langfuse.jsonl", "langfuse")
    made, skipped = with_non_ideal_turn(records, 2, mode)
    assert len(made) == len(records) + 1 and skipped == []
    copy = made[-1]
    assert label in copy["attributes"]["categories"] and dict(Counter(d["role"] for d in copy["documents"])) == roles
    assert copy["attributes"]["history"] == records[1]["attributes"]["history"]
    assert validate_lines("".join(json.dumps(r) + "\n" for r in made).encode()).ok


def test_the_builder_reads_every_trace_format() -> None:
    assert set(trace_formats()) <= set(SOURCE_FORMATS)


def test_the_build_command_reads_traces(tmp_path) -> None:
    out = tmp_path / "built"
    result = CliRunner().invoke(app, ["conversation", "build", str(OURS / "traces_otel.json"), "--format", "otel",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 conversations from 4 traces" in result.output and "wrote 4 instances" in result.output


def test_the_build_tab_builds_conversations_from_a_trace_export(tmp_path, monkeypatch) -> None:
    """Build benchmark's Conversations tab (the builder's declaration) offers the trace formats, builds the sessions
    of a Langfuse export and imports them as a named set."""
    seeded = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", seeded.url)
    monkeypatch.setenv("GAUNTLET_BUILD_DIR", str(tmp_path / "built"))
    monkeypatch.setenv("GAUNTLET_IMPORT_ROOTS", f"{tmp_path}:{OURS}")
    at = AppTest.from_file(str(REPO / "pages" / "build_benchmark.py"), default_timeout=120)
    at.session_state["gauntlet_principal"] = principal("admin")
    at.session_state["build_tab"] = build_tabs()["conversation"]
    at.run()
    layout = at.selectbox(key="build_conversation_format")
    assert set(trace_formats()) <= set(layout.options)
    layout.set_value("langfuse")
    at.text_input(key="build_conversation_source").set_value(str(OURS / "traces_langfuse.jsonl"))
    next(b for b in at.button if b.proto.form_id == "build_conversation").click().run()
    assert not at.exception, at.exception
    assert any(s.value.startswith("Built 4 conversation instances") for s in at.success), [e.value for e in at.error]
    assert any("2 conversations from 4 traces" in c.value for c in at.code)
    at.button(key="build_conversation_import").click().run()
    assert not at.exception, at.exception
    with Session(seeded.engine) as session:
        uids = set(session.exec(select(Instance.uid).where(Instance.protocol == "conversation")).all())
    assert len(uids) == 4 and all(u.startswith("conversation/traces/session-") for u in uids)


def test_every_turn_is_asked_in_the_same_words(tmp_path) -> None:
    """The prompt does not show a turn's answerability: an answerable, an unanswerable and a production turn (no
    reference) get the same system message; earlier turns come as chat messages before the question."""
    from core.protocols import get_protocol
    from core.protocols.prompting import InstanceView

    team = build(OURS / "turns.jsonl", tmp_path / "team", fmt="turns").out.read_text(encoding="utf-8").splitlines()
    production, _, _ = built(tmp_path, OURS / "traces_otel.json", "otel")
    turns = [json.loads(team[0]), json.loads(team[4]), production[2]]  # answerable, unanswerable, production turn 3
    assert [t.get("reference", {}).get("answer_type") for t in turns] == ["long", "unanswerable", None]
    prompts = [get_protocol("conversation").prompt(
        InstanceView(t["query"], protocol="conversation", reference=t.get("reference"), attributes=t["attributes"]),
        [])[0] for t in turns]
    assert len({p[0].content for p in prompts}) == 1
    assert [m.role for m in prompts[2]] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert prompts[2][1].content == PLANS[0] and prompts[2][-1].content.endswith(PLANS[2])


@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic"])
def test_a_production_turn_reaches_the_model_with_the_conversation_so_far(tmp_path, session_url_factory,
                                                                          provider) -> None:
    """Through the real SDK on the loopback server: the scripted model answers turn 2 only when the deployed answer
    of turn 1 precedes its question in the prompt, and declines otherwise; handling by turn then reads 1 on turn 2
    alone. Production turns have no reference: answer quality is not applicable on every one, and counted so."""
    from core.protocols.conversation import HANDLING, QUALITY
    from core.protocols.conversation.analysis import later_turn_drop, turn_table
    from core.store.db import make_engine
    from core.testing.fake_server import ScriptRule
    from tests.factories import imported_scored_run

    records, _, _ = built(tmp_path, OURS / "traces_otel.json", "otel")
    remembers = [ScriptRule(match=r"The basic plan includes 50 gigabytes\.[\s\S]*Question: And can I add more storage",
                            reply="Yes: extra storage comes in 100 gigabyte packs."),
                 ScriptRule(match="", reply="I don't know: the documents do not say.")]
    url = session_url_factory()
    run_id = imported_scored_run(url, tmp_path / "traces.jsonl", records, {"conv-remembers": remembers},
                                 "plans-bot conversations", provider=provider, max_output_tokens=64)
    engine = make_engine(url)
    table = turn_table(engine, [run_id], "heuristic", "turn").set_index(["metric", "turn"])
    assert table.loc[HANDLING, "value"].to_dict() == {1: 0.0, 2: 1.0, 3: 0.0}
    assert table.loc[HANDLING, "n"].to_dict() == {1: 2, 2: 1, 3: 1}
    assert table.loc[QUALITY, ["n", "n_not_applicable"]].sum().to_dict() == {"n": 0, "n_not_applicable": 4}
    drop = later_turn_drop(engine, [run_id], "heuristic").iloc[0]
    assert (drop["n"], drop["n_not_applicable"]) == (0, 4)


def turn_rows(rows: list[tuple[str, int, float | None]]) -> pd.DataFrame:
    """A turn_scores-like frame of one model: (instance uid, turn, answer quality or None: no reference)."""
    from core.protocols.conversation import QUALITY

    return pd.DataFrame({"model": "m", "instance_uid": [r[0] for r in rows], "condition": "",
                         "turn": [r[1] for r in rows], "non_ideal": [r[0].endswith("/gap") for r in rows],
                         QUALITY: [float("nan") if r[2] is None else r[2] for r in rows],
                         f"{QUALITY}_status": ["not_applicable" if r[2] is None else "ok" for r in rows]})


DROPS = [  # turns of one model -> each row's drop (None: not applicable)
    pytest.param([("c/a/t1", 1, 1.0), ("c/a/t4", 4, 0.25), ("c/b/t1", 1, 0.0), ("c/b/t4", 4, 0.0)],
                 [None, 0.75, None, 0.0], id="within-its-own-conversation"),
    pytest.param([("c/a/t2", 2, 1.0), ("c/b/t3", 3, 0.5), ("c/x/t7", 7, 0.25)], [None, None, 0.5],
                 id="one-turn-conversations-against-all-early-turns"),  # MTRAG-UN: each task alone
    pytest.param([("c/a/t1", 1, 1.0), ("c/a/t5", 5, None), ("c/a/t4/gap", 4, 0.0)], [None, None, None],
                 id="no-reference-and-non-ideal-not-applicable"),
    pytest.param([("c/a/t4", 4, 0.5)], [None], id="no-early-turn-at-all"),
]


@pytest.mark.parametrize(("rows", "drops"), DROPS)
def test_the_drop_of_each_turn(rows, drops) -> None:
    from core.protocols.conversation import LATER_DROP
    from core.protocols.conversation.analysis import with_drop

    got = with_drop(turn_rows(rows))
    assert [None if v != v else round(v, 6) for v in got[LATER_DROP]] == drops
    assert list(got[f"{LATER_DROP}_status"]) == ["not_applicable" if d is None else "ok" for d in drops]
