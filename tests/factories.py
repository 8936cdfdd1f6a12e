"""Small benchmark instances built directly through the SQLModel tables, plus model rows for runner tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from core.store.models import Constraint, Document, Domain, Instance, Model
from core.testing.fake_server import FakeLLMServer, ScriptRule

TOPICS = [
    ("What is the maintenance interval of the turbine main bearing",
     "The turbine maintenance interval is 6000 operating hours for the main bearing."),
    ("What is the maximum daily dosage of the drug for adults",
     "The maximum daily dosage of the drug is 4 grams for adults."),
    ("How long is the lease termination notice period",
     "The lease termination notice period is 90 days in writing."),
    ("When is the annual audit report due", "The annual audit report is due on March 31 each year."),
    ("How often do substation inspections happen under the grid code",
     "Substation inspections happen every quarter under the grid code."),
]


def make_domain(session: Session, name: str) -> Domain:
    """The domain called `name`, created if missing."""
    domain = session.exec(select(Domain).where(Domain.name == name)).first()
    if domain is None:
        domain = Domain(name=name, description=f"{name} test domain")
        session.add(domain)
        session.flush()
    return domain


def make_instance(session: Session, *, uid: str, domain: str = "Energy", mode: str = "noisy",
                  query: str = "What is the turbine maintenance interval?", support: str | None = None,
                  noise: list[str] | None = None) -> Instance:
    """An instance with three constraints, one supporting document and noise documents."""
    instance = Instance(uid=uid, domain_id=make_domain(session, domain).id, query=query, mode=mode)
    session.add(instance)
    session.flush()
    constraint_texts = ["You are a careful analyst.", "Cite sources as [doc N].", "Do not use emojis."]
    for position, text in enumerate(constraint_texts):
        session.add(Constraint(instance_id=instance.id, position=position, cid=f"c{position + 1}", text=text,
                               category="output", sub_dimension="format", judge_method="llm", criterion=text))
    docs = [("noise-a", "Cafeteria menu", "The cafeteria serves soup on Mondays.", "noise")]
    if support is not None:
        docs.append((f"{uid}-support", "Maintenance manual", support, "supporting"))
    docs += [(f"noise-{i}", f"Unrelated {i}", text, "noise") for i, text in enumerate(noise or [])]
    for position, (doc_uid, title, text, role) in enumerate(docs):
        session.add(Document(instance_id=instance.id, position=position, doc_uid=doc_uid, title=title, text=text,
                             role=role))
    return instance


def seed_instances(engine: Engine, count: int = 5, *, domains: tuple[str, ...] = ("Energy", "Medical")) -> list[int]:
    """`count` instances cycling through TOPICS and `domains`; returns their ids."""
    ids = []
    with Session(engine) as session:
        for i in range(count):
            question, fact = TOPICS[i % len(TOPICS)]
            instance = make_instance(session, uid=f"inst-{i:03d}", domain=domains[i % len(domains)],
                                     mode=("noisy", "gap", "conflict")[i % 3],
                                     query=f"{question} (case {i})?",
                                     support=fact, noise=["Parking spaces are assigned by seniority."])
            ids.append(instance.id)
        session.commit()
    return ids


def add_model(engine: Engine, name: str, provider: str = "openai", *, price_in: float = 2.0, price_out: float = 8.0,
              settings: dict | None = None, max_output_tokens: int = 64) -> int:
    """Register a model row; returns its id."""
    with Session(engine) as session:
        model = Model(name=name, provider=provider, model_name=name, price_input_per_mtok=price_in,
                      price_output_per_mtok=price_out, max_output_tokens=max_output_tokens,
                      is_baseline=provider == "baseline", settings=settings or {})
        session.add(model)
        session.commit()
        return model.id


def add_fake_server_model(engine: Engine, name: str, base_url: str, env: dict[str, str], timeout_s: int = 10) -> int:
    """Register an openai_compatible model that calls a fake server at `base_url` (its /v1 API); the URL and key
    variables it reads are added to `env` for the caller to set. Returns the model id."""
    prefix = name.upper().replace("-", "_").replace(":", "_")
    env[f"{prefix}_URL"], env[f"{prefix}_KEY"] = base_url + "/v1", "test-key"
    return add_model(engine, name, "openai_compatible", max_output_tokens=256,
                     settings={"base_url_env": f"{prefix}_URL", "api_key_env": f"{prefix}_KEY", "timeout_s": timeout_s})


@contextmanager
def scripted_models(engine: Engine, scripts: dict[str, list[ScriptRule]], max_output_tokens: int = 64,
                    provider: str = "openai_compatible") -> Iterator[None]:
    """Register one model per script (openai_compatible through the openai SDK, or `provider` "anthropic" through
    the anthropic SDK), each answered by its own loopback fake server (env vars <NAME>_URL / <NAME>_KEY set) for the
    duration of the block."""
    servers = {name: FakeLLMServer(script=rules).start() for name, rules in scripts.items()}
    patch = pytest.MonkeyPatch()
    try:
        for name, server in servers.items():
            env = name.upper().replace("-", "_")
            patch.setenv(f"{env}_URL", server.base_url + ("" if provider == "anthropic" else "/v1"))
            patch.setenv(f"{env}_KEY", "test-key")
            add_model(engine, name, provider, max_output_tokens=max_output_tokens,
                      settings={"base_url_env": f"{env}_URL", "api_key_env": f"{env}_KEY", "timeout_s": 5})
        yield
    finally:
        for server in servers.values():
            server.stop()
        patch.undo()


def imported_scored_run(url: str, path: Path, records: list[dict], scripts: dict[str, list[ScriptRule]],
                        domain: str, provider: str = "openai_compatible", max_output_tokens: int = 64) -> int:
    """Write `records` to `path`, import them, run every scripted model on `domain` over the loopback fake server
    and score with the heuristic judge; the run id. `provider` "anthropic" sends the calls through the anthropic SDK."""
    from core.generation import runner, runs
    from core.generation.ratelimit import ManualClock
    from core.ingest.io import import_file
    from core.pipeline import score_and_summarise
    from core.store.db import make_engine

    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    engine = make_engine(url)
    assert import_file(engine, path).created == [r["id"] for r in records]
    with scripted_models(engine, scripts, max_output_tokens, provider):
        run_id = runs.create_run(engine, runs.RunOptions(models=list(scripts), domains=[domain]))
        result = asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
        assert (result.status, result.failed) == ("done", 0)
        asyncio.run(score_and_summarise(engine, run_id, ["heuristic"]))
    engine.dispose()
    return run_id
