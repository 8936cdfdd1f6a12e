"""A reasoning model scores as its answer alone, on every protocol, on SQLite and PostgreSQL.

One instance per protocol (a reference with a known wrong answer, a supporting document, two rule constraints: a
forbidden word and a word limit) answered four ways by scripted responses: the answer alone; the same answer after an
inline <think> block; the same answer with the provider's reasoning stored apart; an unclosed <think> block. The
thinking rejects the wrong answer by naming it, says 'I cannot answer', 'the answer is no', names option A and is long:
read as the answer it would change the wrong-answer metric, the forbidden-word and word-limit checks, refusal and
polarity readings (the control test shows it does). Scored with the offline heuristic judge."""

from __future__ import annotations

import asyncio

import pytest
from sqlmodel import Session, select

from core.protocols import PROTOCOLS
from core.scoring.reference import reference_metric
from core.scoring.scorer import score_run
from core.store.db import make_engine
from core.store.models import Constraint, Document, Domain, Instance, Model, Response, Run, Verdict
from core.store.schema import ReferenceSpec

ANSWER = "Answer: B. The capital of France is Paris."
THOUGHT = ("Could it be Lyon? I cannot answer that from memory alone, so the answer is no until I check. Option A says "
           "Lyon, which is wrong; the document names Paris as the capital, many words here to pass the word limit.")
REFERENCE = {"answer_type": "short", "answers": [{"text": "Paris"}], "wrong_answers": ["Lyon"]}
MCQ = {"answer_type": "mcq", "choices": {"A": "Lyon", "B": "Paris"}, "answer_key": "B", "wrong_answers": ["Lyon"]}
REFERENCES = {"kb_corruption": MCQ}  # an MCQ protocol; every other one gets REFERENCE
WAYS = {"plain": (ANSWER, None, "none"), "inline": (f"<think>{THOUGHT}</think>\n\n{ANSWER}", None, "none"),
        "field": (ANSWER, THOUGHT, "finished"), "unfinished": (f"<think>{THOUGHT}", None, "none")}
PROTOCOL_IDS = ["enterprise_rag", "reference_qa", "production_rag", "domainrag", "lit_ragbench", "kb_corruption",
                "misleading_evidence", "instruction_following"]


def seed(url: str) -> int:
    engine = make_engine(url)
    with Session(engine) as s:
        domain, run = Domain(name="Reasoning"), Run(name="reasoning", status="done")
        models = {way: Model(name=f"m-{way}", provider="openai", model_name=way) for way in WAYS}
        s.add_all([domain, run, *models.values()])
        s.flush()
        for protocol in PROTOCOL_IDS:
            inst = Instance(uid=f"{protocol}-1", domain_id=domain.id, query="What is the capital of France?",
                            protocol=protocol, mode="noisy", language="en",
                            reference=REFERENCES.get(protocol, REFERENCE))
            s.add(inst)
            s.flush()
            s.add(Document(instance_id=inst.id, position=0, doc_uid="d1", title="France", text="Paris is the capital of France.",
                           role="supporting"))
            s.add_all([Constraint(instance_id=inst.id, position=0, cid="c1", text="Do not say Lyon.", category="output",
                                  sub_dimension="content", judge_method="rule", checker_id="keywords:forbidden_words",
                                  checker_kwargs={"forbidden_words": ["Lyon"]}),
                       Constraint(instance_id=inst.id, position=1, cid="c2", text="Fewer than 12 words.",
                                  category="output", sub_dimension="length", judge_method="rule",
                                  checker_id="length_constraints:number_words",
                                  checker_kwargs={"num_words": 12, "relation": "less than"})])
            for way, (text, reasoning, state) in WAYS.items():
                s.add(Response(run_id=run.id, model_id=models[way].id, instance_id=inst.id, status="done", text=text,
                               reasoning=reasoning, reasoning_state=state, latency_ms=1.0))
        s.commit()
        run_id = run.id
    asyncio.run(score_run(engine, run_id, "heuristic"))
    engine.dispose()
    return run_id


@pytest.fixture(scope="module")
def verdicts(session_url_factory) -> dict[tuple[str, str], set[tuple]]:
    """(protocol, way) -> the set of (metric, constraint cid, status, value, passed) of its response."""
    url = session_url_factory()
    run_id = seed(url)
    engine = make_engine(url)
    with Session(engine) as s:
        rows = s.exec(select(Verdict, Instance.protocol, Model.model_name, Constraint.cid)
                      .join(Response, Response.id == Verdict.response_id)
                      .join(Instance, Instance.id == Response.instance_id).join(Model, Model.id == Response.model_id)
                      .join(Constraint, Constraint.id == Verdict.constraint_id, isouter=True)
                      .where(Verdict.run_id == run_id)).all()
    engine.dispose()
    out: dict[tuple[str, str], set[tuple]] = {}
    for v, protocol, way, cid in rows:
        value = None if v.value is None else round(v.value, 9)
        out.setdefault((protocol, way), set()).add((v.metric, cid, v.status, value, v.passed))
    return out


@pytest.mark.parametrize("protocol", PROTOCOL_IDS)
@pytest.mark.parametrize("way", ["inline", "field"])
def test_a_reasoning_model_scores_as_its_answer_alone(verdicts, protocol: str, way: str) -> None:
    plain = verdicts[(protocol, "plain")]
    assert any(status == "ok" for _, _, status, _, _ in plain), plain  # something was scored
    assert verdicts[(protocol, way)] == plain


@pytest.mark.parametrize("protocol", PROTOCOL_IDS)
def test_unfinished_reasoning_is_its_own_state(verdicts, protocol: str) -> None:
    got = verdicts[(protocol, "unfinished")]
    assert len(got) == len(verdicts[(protocol, "plain")])
    assert {status for _, _, status, _, _ in got} == {"unparseable"}


def test_rule_constraints_read_the_answer_alone(verdicts) -> None:
    plain = {(m, cid): passed for m, cid, _, _, passed in verdicts[("enterprise_rag", "plain")] if m == "constraint"}
    assert plain == {("constraint", "c1"): True, ("constraint", "c2"): True}


def test_control_the_thinking_read_as_the_answer_would_change_the_scores() -> None:
    ref = ReferenceSpec.model_validate(REFERENCE)
    raw = reference_metric("wrong_answer", ref, f"{THOUGHT} {ANSWER}", "en")  # the thinking read as the answer
    assert raw.value == 1.0 and reference_metric("wrong_answer", ref, ANSWER, "en").value == 0.0
    from core.scoring.checkers import build_checker

    words = build_checker("length_constraints:number_words", {"num_words": 12, "relation": "less than"})
    assert words.check(ANSWER) and not words.check(f"{THOUGHT} {ANSWER}")
    assert set(PROTOCOL_IDS) <= set(PROTOCOLS.names())
