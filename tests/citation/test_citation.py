"""The citation protocol (issue 44): ALCE-style citation recall and precision, checked against ALCE's own evaluation
code (princeton-nlp/ALCE eval.py `compute_autoais` and utils.py `remove_citations` at 246c476, MIT, read from the
unchanged copies committed in data/suites/alce/ and run with the same support verdicts; compared with a fetched mirror
of ALCE when present); support decided by
an LLM judge through the openai SDK on the fake server, the heuristic judge deciding only what the format decides;
scripted gold / over-citing / wrong / always-refuse models through the openai and anthropic SDKs (active backend)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from core.cli import app
from core.protocols import decision_metrics
from core.protocols.citation import PRECISION, RECALL
from core.protocols.citation.builder import build
from core.protocols.citation.metrics import remove_citations, split_sentences, tally
from core.review.auth import Principal
from core.store.db import make_engine
from core.store.models import Annotation, Assignment, Instance, Model, Response, User
from core.testing.fake_server import ScriptRule
from tests.factories import imported_scored_run, scripted_models
from tests.protocol_steps import assert_page_renders, run_docs_commands

# One xdist worker runs this module: each of its module-scoped worlds is built once, not once per worker
pytestmark = pytest.mark.xdist_group("citation")

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "citation"
ALCE_MIRROR = Path("/work/.mirror/princeton-nlp+ALCE/repo")
ALCE_COMMIT = "246c476a4edfc564266b7346b6e29ef4861ae937"


ALCE_CUT = REPO / "data" / "suites" / "alce"
ALCE_BLOBS = {"eval.py": "4d62b5a7bbfdc14a14226733c768e72f73444a95",  # ALCE's git blobs at ALCE_COMMIT
              "utils.py": "69894d439e0ce644b2937035173c4ec5790e271a"}


def git_blob_id(data: bytes) -> str:
    """The id git gives a file of these bytes (its blob's sha1)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 - git's id, not a secret


def alce_source(path: str) -> str:
    """One of ALCE's evaluation files at ALCE_COMMIT, from the unchanged copy in data/suites/alce/."""
    return (ALCE_CUT / path).read_text(encoding="utf-8")


@pytest.mark.parametrize("path", list(ALCE_BLOBS))
def test_the_committed_evaluation_code_is_alces_at_the_commit(path: str) -> None:
    assert git_blob_id((ALCE_CUT / path).read_bytes()) == ALCE_BLOBS[path]


@pytest.mark.parametrize("path", list(ALCE_BLOBS))
def test_the_committed_evaluation_code_is_the_mirrors(path: str) -> None:
    if not ALCE_MIRROR.exists():
        pytest.skip(f"no fetched copy of princeton-nlp/ALCE at {ALCE_MIRROR} (fetch github:princeton-nlp/ALCE)")
    published = subprocess.run(["git", "--git-dir", str(ALCE_MIRROR), "show", f"{ALCE_COMMIT}:{path}"],
                               capture_output=True, check=True).stdout
    assert (ALCE_CUT / path).read_bytes() == published


def function_source(source: str, name: str) -> str:
    """One top-level function of a module's source, as written."""
    start = source.index(f"def {name}(")
    end = re.search(r"\n(?=\S)", source[start + 1:])
    return source[start: start + 1 + end.start()] if end else source[start:]


def alce_compute_autoais(supports):
    """ALCE's compute_autoais as published, its NLI model replaced by `supports(passage, claim)`."""
    namespace = {"re": re, "np": np, "copy": __import__("copy"), "logger": logging.getLogger("alce"),
                 "tqdm": lambda x: x, "sent_tokenize": split_sentences, "autoais_model": object(),
                 "autoais_tokenizer": object(), "AUTOAIS_MODEL": "", "_run_nli_autoais": lambda p, c: int(supports(p, c))}
    exec(function_source(alce_source("utils.py"), "remove_citations"), namespace)  # noqa: S102 - their code, read
    exec(function_source(alce_source("eval.py"), "compute_autoais"), namespace)  # noqa: S102
    return namespace["compute_autoais"]


DOCS = [{"title": "A", "text": "The bridge was designed by Ada Lind."}, {"title": "B", "text": "Its lights are by Omar Sayed."},
        {"title": "C", "text": "Ferries run every twenty minutes."}]


def supports(passage: str, claim: str) -> bool:
    """A support oracle both sides share: every sentence of the claim's words found in the passage."""
    return claim.rstrip(".").strip().lower() in passage.lower()


AGREEMENT = [  # an answer -> ALCE's (recall, precision) must equal ours
    pytest.param("The bridge was designed by Ada Lind [1].", id="one-supported-citation"),
    pytest.param("The bridge was designed by Ada Lind [1][2].", id="over-citation"),
    pytest.param("The bridge was designed by Ada Lind [2].", id="wrong-citation"),
    pytest.param("The bridge was designed by Ada Lind.", id="no-citation"),
    pytest.param("The bridge was designed by Ada Lind [7].", id="citation-out-of-range"),
    pytest.param("The bridge was designed by Ada Lind [1]. Its lights are by Omar Sayed [2][3].", id="two-sentences"),
    pytest.param("Ferries run every twenty minutes [3][1][2][1].", id="more-than-three-citations"),
    pytest.param("I don't know.", id="refusal"),
]


@pytest.mark.parametrize("answer", AGREEMENT)
def test_recall_and_precision_agree_with_alces_evaluator(answer: str) -> None:
    theirs = alce_compute_autoais(supports)([{"question": "q", "output": answer, "docs": DOCS}], at_most_citations=3)
    passages = [f"Title: {d['title']}\n{d['text']}" for d in DOCS]

    async def oracle(passage: str, claim: str) -> bool:
        return supports(passage, claim)

    ours = asyncio.run(tally(answer, passages, oracle))
    precision = ours.entail_prec / ours.citations if ours.citations else 0.0
    assert (100 * ours.entail / ours.sentences, 100 * precision) == pytest.approx(
        (theirs["citation_rec"], theirs["citation_prec"]))


@pytest.mark.parametrize("sentence", ["Ada Lind [1][2] designed it.", "It is [12] | long [3].", "Plain."])
def test_remove_citations_is_alces(sentence: str) -> None:
    namespace: dict = {"re": re}
    exec(function_source(alce_source("utils.py"), "remove_citations"), namespace)  # noqa: S102
    assert remove_citations(sentence) == namespace["remove_citations"](sentence)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_builds_from_alces_layout(tmp_path) -> None:
    records = read_jsonl(build(FIXTURES / "alce_layout.json", tmp_path).out)
    assert [[d["role"] for d in r["documents"]] for r in records] == [["supporting", "supporting", "partial"],
                                                                       ["partial"]]
    assert records[0]["reference"]["answer_type"] == "long"


# ----------------------------------------------------------------------------------- scripted runs, both SDKs

ANSWERS = {  # model -> the reply to each question, by its record id
    "cite-gold": {"tax": "Sole traders file the annual return by 31 January [1]. A late return costs a fixed penalty "
                         "of 100 pounds [2].", "plan": "The basic plan includes 50 gigabytes of storage [1]."},
    "cite-over": {"tax": "Sole traders file the annual return by 31 January [1][2]. A late return costs a fixed "
                         "penalty of 100 pounds [2].", "plan": "The basic plan includes 50 gigabytes of storage [1][2]."},
    "cite-wrong": {"tax": "Sole traders file the annual return by 31 January [2]. A late return costs a fixed penalty "
                          "of 100 pounds [3].", "plan": "The basic plan includes 50 gigabytes of storage [2]."},
    "cite-refuse": {"tax": "I don't know.", "plan": "I don't know."},
}
JUDGE = [ScriptRule(match=r"task: citation_support\][\s\S]*Claim: ([^\n]{12,}?)\.?\n\nPassage:[\s\S]*\1",
                    reply='{"supported": true, "reason": "stated"}'),
         ScriptRule(match=r"task: citation_support", reply='{"supported": false, "reason": "not stated"}')]


@dataclass(frozen=True)
class World:
    url: str
    run_id: int


@pytest.fixture(scope="module", params=["openai_compatible", "anthropic"])
def world(request, session_url_factory, tmp_path_factory) -> World:
    from core.pipeline import score_and_summarise

    tmp = tmp_path_factory.mktemp("cite")
    records = read_jsonl(build(FIXTURES / "records.jsonl", tmp, fmt="records").out)
    questions = {r["id"].rsplit("/", 1)[1]: r["query"] for r in records}
    scripts = {model: [ScriptRule(match=re.escape(questions[key]), reply=reply) for key, reply in replies.items()]
               for model, replies in ANSWERS.items()}
    url = session_url_factory()
    run_id = imported_scored_run(url, tmp / "cite.jsonl", records, scripts, "Citations", provider=request.param,
                                 max_output_tokens=128)
    engine = make_engine(url)
    with scripted_models(engine, {"judge-cite": JUDGE}):
        asyncio.run(score_and_summarise(engine, run_id, ["llm:judge-cite"]))
    engine.dispose()
    return World(url, run_id)


CALIBRATION = [  # model -> (recall, precision) by the LLM judge; (recall state, n decided) by the heuristic judge
    pytest.param("cite-gold", 1.0, 1.0, 0, id="gold"),
    pytest.param("cite-over", 1.0, (2 / 3 + 1 / 2) / 2, 0, id="over-cites"),
    pytest.param("cite-wrong", 0.0, 0.0, 0, id="wrong"),
    pytest.param("cite-refuse", 0.0, 0.0, 2, id="always-refuse-no-citation"),
]


@pytest.mark.parametrize(("model", "recall", "precision", "offline_n"), CALIBRATION)
def test_calibration(world, model, recall, precision, offline_n) -> None:
    from core.protocols.citation.analysis import citation_table

    engine = make_engine(world.url)
    judged = citation_table(engine, [world.run_id], "llm:judge-cite").set_index(["model", "metric"])
    assert (judged.loc[(model, RECALL), "value"], judged.loc[(model, PRECISION), "value"]) == pytest.approx(
        (recall, precision))
    assert judged.loc[(model, RECALL), "n"] == 2
    offline = citation_table(engine, [world.run_id], "heuristic").set_index(["model", "metric"])
    row = offline.loc[(model, RECALL)]
    assert (row["n"], row["n_not_applicable"]) == (offline_n, 2 - offline_n)  # cited sentences need the LLM judge


def test_report_command_and_view(world, monkeypatch) -> None:
    from core.protocols.citation.views import citation_view

    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    result = CliRunner().invoke(app, ["report", str(world.run_id), "--format", "json", "--judge", "llm:judge-cite"])
    assert result.exit_code == 0, result.output
    own = CliRunner().invoke(app, ["citation", "report", str(world.run_id), "--judge", "llm:judge-cite"])
    assert own.exit_code == 0 and "cite-over" in own.stdout and "n_not_applicable" in own.stdout
    view = citation_view(make_engine(world.url), [world.run_id], "heuristic")
    assert "judge: heuristic" in view.figure.layout.title.text and "n_not_applicable" in view.table.columns


def test_declares_its_decision_metrics() -> None:
    rows = {r.id: r for r in decision_metrics("citation")}
    assert [m for m, r in rows.items() if r.role == "headline"] == [RECALL, PRECISION]
    assert rows[RECALL].judges == ("rule", "llm") and all(r.meaning for r in rows.values())


def test_the_docs_commands_run_as_written(tmp_path, monkeypatch, db_url) -> None:
    alce = "data/suites/alce/human_eval_citations_subset.json"
    copies = {"tests/fixtures/citation/records.jsonl": FIXTURES / "records.jsonl", alce: REPO / alce}
    run_docs_commands("citation.md", copies, tmp_path, monkeypatch)
    assert len(read_jsonl(tmp_path / "var" / "built" / "citation" / "instances.jsonl")) == 2


def test_its_page_renders_from_its_declarations(world, monkeypatch) -> None:
    assert_page_renders(world.url, monkeypatch, "citation", "Citation recall and precision")


# ------------------------------------------------------------- experts label citation support; the judge checked


def _expert(engine) -> Principal:
    from datetime import UTC, datetime

    from core.review.auth import create_user

    with Session(engine) as session:
        if session.exec(select(User).where(User.username == "cite-expert")).first() is None:
            create_user(engine, "cite-expert", "expert", password="cite-expert-pass-1", domains=["Citations"])
    now = datetime.now(UTC)
    return Principal("cite-expert", "expert", ("Citations",), now, now)


def _response(engine, run_id: int, model: str, key: str) -> Response:
    with Session(engine) as session:
        rows = session.exec(select(Response, Model, Instance).where(
            Response.run_id == run_id, Response.model_id == Model.id, Model.name == model,
            Response.instance_id == Instance.id)).all()
    return next(r for r, _, inst in rows if inst.uid.endswith(f"/{key}"))


def _label(engine, expert: Principal, response: Response, support: dict[str, str], token: str) -> None:
    from core.review.gold import record_gold_label

    with Session(engine) as session:
        if session.exec(select(Assignment).where(Assignment.target_id == response.id,
                                                 Assignment.assignee == expert.username)).first() is None:
            session.add(Assignment(kind="gold_label", target_id=response.id, assignee=expert.username))
            session.commit()
    record_gold_label(engine, expert, response.id or 0, {"constraints": {}, "citation_support": support}, token)


BAD_SUPPORT = [  # a citation-support label that does not fit the response -> the message
    pytest.param({"1": "supported"}, "one label per sentence 1..2", id="a-sentence-unlabelled"),
    pytest.param({"1": "supported", "2": "maybe"}, "must be one of supported, partial, not", id="unknown-value"),
    pytest.param({}, "required for a citation response", id="none-given"),
]


@pytest.mark.parametrize(("support", "message"), BAD_SUPPORT)
def test_a_citation_support_label_that_does_not_fit_is_refused(world, support, message) -> None:
    engine = make_engine(world.url)
    with pytest.raises(ValueError, match=message):
        _label(engine, _expert(engine), _response(engine, world.run_id, "cite-gold", "tax"), support, f"bad-{message}")


def test_the_judge_is_checked_against_experts_citation_support_labels(world, monkeypatch) -> None:
    """Gold: the judge says both sentences are supported, the expert only the first (the second 'partial'); wrong:
    both unsupported for both. Agreement 3 of 4, kappa 0.5. Relabelling appends a label and the latest counts."""
    from core.protocols.citation.analysis import expert_support_agreement

    engine = make_engine(world.url)
    expert = _expert(engine)
    gold, wrong = (_response(engine, world.run_id, m, "tax") for m in ("cite-gold", "cite-wrong"))
    _label(engine, expert, gold, {"1": "supported", "2": "partial"}, "cs-gold")
    _label(engine, expert, wrong, {"1": "supported", "2": "not"}, "cs-wrong-1")
    _label(engine, expert, wrong, {"1": "not", "2": "not"}, "cs-wrong-2")  # a second thought: appended
    result = expert_support_agreement(engine, [world.run_id], "llm:judge-cite")
    assert (result.n, result.agreement, result.kappa, result.undecided) == (4, 0.75, pytest.approx(0.5), 0)
    offline = expert_support_agreement(engine, [world.run_id], "heuristic")
    assert (offline.n, offline.undecided) == (0, 4)  # every labelled sentence cites: the heuristic cannot decide
    with Session(engine) as session:
        assert len(session.exec(select(Annotation).where(Annotation.target_id == wrong.id)).all()) == 2
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    own = CliRunner().invoke(app, ["citation", "report", str(world.run_id), "--judge", "llm:judge-cite"])
    assert "vs experts' citation-support labels, per sentence: agreement 75.0%, κ 0.50 (n 4" in own.stdout
    from core.analysis.label_kinds import label_kind_table
    from core.protocols.citation import SUPPORT

    table = label_kind_table(engine, SUPPORT).set_index("Judge")  # what Judge alignment shows
    assert table.loc["llm:judge-cite", ["Agreement %", "n sentences", "n undecided"]].tolist() == [75.0, 4, 0]


def test_experts_label_citation_support_with_keyboard_buttons(world, monkeypatch) -> None:
    """The label page shows a citation response's sentences one at a time with Alt+1/2/3 buttons; a press fills the
    sentence's radio in the label form and moves to the next sentence."""
    from streamlit.testing.v1 import AppTest

    engine = make_engine(world.url)
    expert = _expert(engine)
    response = _response(engine, world.run_id, "cite-over", "tax")
    with Session(engine) as session:
        session.add(Assignment(kind="gold_label", target_id=response.id, assignee=expert.username, queue_position=0))
        session.commit()
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    at = AppTest.from_file(str(REPO / "pages" / "label_responses.py"), default_timeout=30)
    at.session_state["gauntlet_principal"] = expert
    at.run()
    assert not at.exception, at.exception
    shortcuts = {b.label: b for b in at.button}
    assert {"Supported (Alt+1)", "Partially (Alt+2)", "Not supported (Alt+3)"} <= set(shortcuts)
    assert "sentence 1 of 2" in "\n".join(m.value for m in at.markdown)
    shortcuts["Partially (Alt+2)"].click().run()
    radios = [r for r in at.radio if r.label.startswith("Sentence ")]
    assert [r.value for r in radios] == ["partial", None]
    assert "sentence 2 of 2" in "\n".join(m.value for m in at.markdown)
