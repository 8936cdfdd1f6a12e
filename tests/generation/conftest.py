"""Reference-QA instances (documents with roles, an HTML page, MCQ without documents) next to EnterpriseRAG ones."""

from __future__ import annotations

import pytest
from sqlmodel import Session

from core.generation import registered_models
from core.store.models import Document, Instance
from tests.factories import add_model, make_domain, seed_instances

PAGE = ("<html><head><title>Admissions</title><style>td {{color: red}}</style></head><body>"
        "<script>track('visit')</script><h2>Cut-off scores {i}</h2><table><tr><th>Programme</th><th>Score</th></tr>"
        "<tr><td>Economics</td><td>63{i}</td></tr></table></body></html>")


def add_qa_instance(session: Session, uid: str, *, query: str, documents: list[tuple[str, str, str, str]],
                    reference: dict, attributes: dict | None = None) -> Instance:
    """A reference_qa instance; documents are (doc_uid, role, content_type, text) in stored order."""
    instance = Instance(uid=uid, domain_id=make_domain(session, "Admissions").id, query=query, mode=None,
                        protocol="reference_qa", reference=reference, attributes=attributes or {}, language="en")
    session.add(instance)
    session.flush()
    for position, (doc_uid, role, content_type, text) in enumerate(documents):
        session.add(Document(instance_id=instance.id, position=position, doc_uid=doc_uid, title="", text=text,
                             role=role, content_type=content_type, variant={"format": content_type}))
    return instance


def seed_qa(engine, count: int = 4) -> list[int]:
    """`count` open questions with a supporting passage, a noise passage and an HTML page, plus one MCQ."""
    ids = []
    with Session(engine) as session:
        for i in range(count):
            docs = [(f"q{i}-support", "supporting", "text", f"The Economics cut-off score in year {i} was 63{i}."),
                    (f"q{i}-noise", "noise", "text", "The canteen opens at noon."),
                    (f"q{i}-page", "supporting", "html", PAGE.format(i=i))]
            ids.append(add_qa_instance(session, f"qa-{i}", query=f"What was the Economics cut-off in year {i}?",
                                       documents=docs, reference={"answer_type": "short",
                                                                  "answers": [{"text": f"63{i}"}]}).id)
        mcq = {"answer_type": "mcq", "choices": {"A": "Paris", "B": "Rome"}, "answer_key": "A"}
        ids.append(add_qa_instance(session, "qa-mcq", query="What is the capital of France?", documents=[],
                                   reference=mcq).id)
        session.commit()
    return ids


@pytest.fixture
def mixed(engine, monkeypatch, tmp_path):
    """Four open reference-QA questions, one MCQ, two EnterpriseRAG instances, gpt-x (openai) and the baselines."""
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    seed_qa(engine)
    seed_instances(engine, 2)
    add_model(engine, "gpt-x", "openai", settings={"timeout_s": 0.3})
    registered_models.ensure_baselines(engine)
    return engine
