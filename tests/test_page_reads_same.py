"""The faster reads behind Browse workspace, the protocol pages' run choice, Judge alignment and Verify instances give
the answers the previous reads gave (issue 42 item 1): each previous read is kept here as it was, and both run on the
same databases, case by case, on the active backend (SQLite, or PostgreSQL with GAUNTLET_TEST_BACKEND=postgresql)."""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from collections.abc import Iterable

import pytest
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.analysis.alignment import default_run, judges_for
from core.analysis.readmodel import RULE_JUDGE, scored_runs
from core.analysis.readmodel.runs import scored_run_list
from core.ingest import composition as comp
from core.ingest.io import import_file
from core.ingest.sets import benchmark_sets
from core.protocols import PROTOCOLS, constraint_protocols
from core.protocols.enterprise_rag.composition import DomainRow, ModeRow, composition
from core.protocols.views import holds_protocol, newest_run_holding, protocol_runs
from core.review.verification import verification_queue
from core.store.benchmark import InstanceRow, instance_rows
from core.store.db import saved_id
from core.store.generated import GENERIC_KEY, generated_mark, mark_cell
from core.store.labels import effective_annotations, expert_labels, gold_labels, label_items, live_annotations
from core.store.models import (
    Annotation,
    BenchmarkSet,
    BenchmarkSetMember,
    Constraint,
    Document,
    Domain,
    Instance,
    Model,
    Response,
    Run,
    Verdict,
)
from core.store.schema import CATEGORIES, MODES
from tests.generated_items import drafted_query_meta, generated_stress_item, write_specs
from tests.pages import state_counts as sc
from tests.workspace_factories import principal, seeded_db

# ----------------------------------------------------------------------------------------- the previous reads


def old_instance_rows(engine: Engine, *, domains=None, modes=None, statuses=None, search="", latest_only=True,
                      set_id=None) -> list[InstanceRow]:
    with Session(engine) as session:
        n_constraints = select(Constraint.instance_id, func.count().label("n")).group_by(
            col(Constraint.instance_id)).subquery()
        n_documents = select(Document.instance_id, func.count().label("n")).group_by(col(Document.instance_id)).subquery()
        query = (select(Instance, Domain.name, n_constraints.c.n, n_documents.c.n)
                 .join(Domain, col(Domain.id) == Instance.domain_id)
                 .outerjoin(n_constraints, n_constraints.c.instance_id == Instance.id)
                 .outerjoin(n_documents, n_documents.c.instance_id == Instance.id))
        if latest_only:
            query = query.where(Instance.is_latest == True)  # noqa: E712
        if domains:
            query = query.where(col(Domain.name).in_(domains))
        if modes:
            query = query.where(col(Instance.mode).in_(modes))
        if statuses:
            query = query.where(col(Instance.status).in_(statuses))
        if set_id is not None:
            members = select(BenchmarkSetMember.instance_id).where(BenchmarkSetMember.set_id == set_id)
            query = query.where(col(Instance.id).in_(members))
        if search.strip():
            from sqlalchemy import or_
            pattern = f"%{search.strip()}%"
            in_documents = select(Document.instance_id).where(
                or_(col(Document.text).ilike(pattern), col(Document.title).ilike(pattern)))
            query = query.where(or_(col(Instance.query).ilike(pattern), col(Instance.uid).ilike(pattern),
                                    col(Instance.id).in_(in_documents)))
        results = session.exec(query.order_by(col(Instance.uid), col(Instance.version))).all()
    return [InstanceRow(id=saved_id(i), uid=i.uid, version=i.version, domain=name, mode=i.mode, origin=i.origin,
                        status=i.status, constraints=nc or 0, documents=nd or 0, query=i.query,
                        generated=mark_cell(generated_mark(i.meta, nc or 0))) for i, name, nc, nd in results]


def old_composition(engine: Engine) -> tuple[list[DomainRow], list[ModeRow]]:
    with Session(engine) as session:
        rows = session.exec(select(Instance.id, Domain.name, Instance.mode, Instance.origin)
                            .join(Domain, col(Domain.id) == Instance.domain_id)
                            .where(Instance.is_latest == True,  # noqa: E712
                                   col(Instance.protocol).in_(constraint_protocols()))).all()
        ids = [r[0] for r in rows if r[0] is not None]
        counts = session.exec(select(Constraint.instance_id, Constraint.category)
                              .where(col(Constraint.instance_id).in_(ids))).all()
    per_instance = {i: dict.fromkeys(CATEGORIES, 0) for i in ids}
    for instance_id, category in counts:
        per_instance[instance_id][category] += 1
    domain_of = {r[0]: r[1] for r in rows}

    def domain_row(name, members):
        n = len(members) or 1
        sums = {c: sum(per_instance[i][c] for i in members) for c in CATEGORIES}
        return DomainRow(name, len(members), round(sum(sums.values()) / n, 2), round(sums["persona"] / n, 2),
                         round(sums["output"] / n, 2), round(sums["knowledge_protocol"] / n, 2))

    table5 = [domain_row(d, [i for i in ids if domain_of[i] == d]) for d in sorted(set(domain_of.values()))]
    table5.append(domain_row("All", ids))
    total = len(rows) or 1
    table6 = []
    for mode in MODES:
        members = [r for r in rows if r[2] == mode]
        table6.append(ModeRow(mode, len(members), round(len(members) / total, 3),
                              sum(1 for r in members if r[3] == "natural"),
                              sum(1 for r in members if r[3] == "augmented")))
    return table5, table6


def old_protocol_composition(engine: Engine) -> list[comp.ProtocolComposition]:
    with Session(engine) as session:
        found = session.exec(select(Instance.protocol, Instance.mode, Instance.attributes, Instance.meta)
                             .where(col(Instance.is_latest) == True)).all()  # noqa: E712
    grouped: dict[str, list] = {}
    for protocol, mode, attributes, meta in found:
        grouped.setdefault(protocol, []).append((mode, dict(attributes or {}), dict(meta or {})))
    parts = []
    for p in sorted(grouped, key=comp._order):
        tables = comp.declared_tables(engine, p)
        rows = [] if tables else [r for facet in comp.FACETS.get(p, comp.OTHER_FACETS)
                                  for r in comp.facet_rows(p, grouped[p], facet)]
        parts.append(comp.ProtocolComposition(p, len(grouped[p]), rows, tables,
                                              PROTOCOLS.get(p).title if p in PROTOCOLS else p))
    return parts


def old_newest_run_holding(engine: Engine, protocol: str, run_ids: Iterable[int]) -> int | None:
    held = set(protocol_runs(engine, protocol)["run_id"].astype(int))
    return next((int(r) for r in sorted(run_ids, reverse=True) if int(r) in held), None)


def old_judges_for(engine: Engine, run_ids: Iterable[int]) -> list[str]:
    with Session(engine) as session:
        judges = session.exec(select(Verdict.judge).where(col(Verdict.run_id).in_(list(run_ids))).distinct()).all()
    return sorted(set(judges) - {RULE_JUDGE})


def old_gold_labels(engine: Engine, run_ids=None) -> dict:
    scope = None if run_ids is None else set(Session(engine).exec(
        select(Response.id).where(col(Response.run_id).in_(list(run_ids)))).all())
    out: dict = {}
    for rid, by_author in effective_annotations(engine, "gold_label", scope, "response").items():
        if len(by_author) >= 2:
            flats = [label_items(a.payload) for a in by_author.values()]
            if all(f == flats[0] for f in flats):
                out[rid] = next(iter(by_author.values())).payload
    for rid, by_author in effective_annotations(engine, "adjudication", scope, "response").items():
        out[rid] = max(by_author.values(), key=lambda a: (a.created_at, a.id or 0)).payload
    return out


def old_default_run(engine: Engine, runs: list[int]) -> list[int]:
    if not runs:
        return []
    with Session(engine) as session:
        judged = set(session.exec(select(Verdict.run_id).where(col(Verdict.run_id).in_(list(runs)),
                                                               Verdict.judge != RULE_JUDGE).distinct()).all())
    labelled = next((r for r in runs if r in judged and old_gold_labels(engine, [r])), None)
    return [labelled or next((r for r in runs if r in judged), runs[0])]


def old_verification_queue(engine: Engine, who, overlap: float) -> tuple[list[int], int]:
    from core.review.verification import _covers

    with Session(engine) as session:
        domains = {d.id: d.name for d in session.exec(select(Domain)).all()}
        latest = session.exec(select(Instance).where(Instance.is_latest == True)).all()  # noqa: E712
    deciders: dict[int, set[str]] = defaultdict(set)
    for ann in live_annotations(engine, "verification"):
        deciders[ann.target_id].add(ann.author)
    strata: dict = defaultdict(list)
    for inst in latest:
        strata[(domains.get(inst.domain_id, ""), inst.mode)].append(inst.uid)
    doubles: set[str] = set()
    for uids in strata.values():
        ordered = sorted(set(uids), key=lambda u: hashlib.sha256(u.encode()).hexdigest())
        doubles.update(ordered[: math.ceil(min(overlap, 1.0) * len(ordered))] if overlap > 0 else [])
    queue = [i for i in latest if _covers(who, domains.get(i.domain_id, "")) and i.status == "unverified"
             and who.username not in deciders[saved_id(i)]
             and len(deciders[saved_id(i)]) < (2 if i.uid in doubles else 1)]
    queue.sort(key=lambda i: (i.created_at, i.id))
    return [saved_id(i) for i in queue], len({t for t, w in deciders.items() if who.username in w})


# ----------------------------------------------------------------------------------------- databases


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """The seeded workspace, a model-written misleading-evidence item, a drafted query and a named set."""
    tmp = tmp_path_factory.mktemp("reads")
    seeded = seeded_db(tmp)
    report = import_file(seeded.engine, write_specs([generated_stress_item()], tmp / "stress.jsonl"))
    assert report.ok, report.errors
    with Session(seeded.engine) as session:
        gap = session.get(Instance, seeded.instances["E-gap"])
        gap.meta = {**gap.meta, **drafted_query_meta(), "atomic_ids": ["c1"]}
        chosen = BenchmarkSet(name="two of them")
        session.add_all([gap, chosen])
        session.flush()
        session.add_all([BenchmarkSetMember(set_id=chosen.id, instance_id=seeded.instances[uid])
                         for uid in ("E-gap", "M-noisy")])
        session.commit()
    return seeded


@pytest.fixture(scope="module")
def runs(session_url_factory):
    """Run 1: EnterpriseRAG (synthetic, heuristic judge, 3 models x 40 instances); run 2: rule verdicts only, on a
    RAGStress item; run 3: a misleading-evidence response judged heuristically; run 4 hidden, holding RAGStress."""
    url = sc.synthetic_results(session_url_factory())
    from core.store.db import make_engine
    engine = make_engine(url)
    with Session(engine) as session:
        domain = session.exec(select(Domain)).first()
        model = session.exec(select(Model)).first()
        for name, protocol, judge, hidden in (("rule-only", "kb_corruption", RULE_JUDGE, False),
                                              ("misleading", "misleading_evidence", "heuristic", False),
                                              ("hidden", "kb_corruption", "heuristic", True)):
            run = Run(name=name, status="done")
            if hidden:
                from datetime import UTC, datetime
                run.hidden_at = datetime.now(UTC)
            instance = Instance(uid=f"{protocol}-{name}", domain_id=domain.id, query="Which?", protocol=protocol,
                                mode=None, reference={"answer_key": "A", "choices": {"A": "a", "B": "b"}})
            session.add_all([run, instance])
            session.flush()
            response = Response(run_id=run.id, model_id=model.id, instance_id=instance.id, status="done", text="A")
            session.add(response)
            session.flush()
            session.add(Verdict(response_id=response.id, run_id=run.id, judge=judge, metric="mcq_accuracy",
                                value=1.0, method=judge))
        session.commit()
    yield engine
    engine.dispose()


# ----------------------------------------------------------------------------------------- same answers


@pytest.mark.parametrize("filters", [
    pytest.param({}, id="all"),
    pytest.param({"modes": ["gap"]}, id="one-mode"),
    pytest.param({"domains": ["Medical"]}, id="one-domain"),
    pytest.param({"statuses": ["unverified"]}, id="unverified"),
    pytest.param({"search": "peak"}, id="search-document-text"),
    pytest.param({"search": "E-con"}, id="search-uid"),
    pytest.param({"latest_only": False}, id="every-version"),
    pytest.param({"set_id": "first"}, id="one-set"),
])
def test_instance_list_is_the_same(workspace, filters) -> None:
    if filters.get("set_id") == "first":
        filters = {"set_id": benchmark_sets(workspace.engine)[0].id}
    new, old = instance_rows(workspace.engine, **filters), old_instance_rows(workspace.engine, **filters)
    assert new == old and new  # marks included: the drafted query and the written evidence carry theirs
    if not filters:
        assert {r.generated for r in new} - {""}


def test_composition_is_the_same(workspace, runs) -> None:
    for engine in (workspace.engine, runs):
        assert composition(engine) == old_composition(engine)
        assert comp.protocol_composition(engine) == old_protocol_composition(engine)


@pytest.mark.parametrize(("protocol", "run_ids"), [
    pytest.param("enterprise_rag", [1, 2, 3], id="enterprise-in-the-oldest"),
    pytest.param("kb_corruption", [1, 2, 3], id="ragstress-rule-verdicts-only"),
    pytest.param("misleading_evidence", [1, 2, 3], id="misleading-in-the-newest"),
    pytest.param("misleading_evidence", [1, 2], id="none-holds-it"),
    pytest.param("kb_corruption", [4], id="only-in-a-hidden-run"),
    pytest.param("domainrag", [1, 2, 3, 4], id="no-instance-of-it"),
    pytest.param("enterprise_rag", [], id="no-run"),
])
def test_run_holding_a_protocol_is_the_same(runs, protocol, run_ids) -> None:
    newest = old_newest_run_holding(runs, protocol, run_ids)
    assert newest_run_holding(runs, protocol, run_ids) == newest
    assert holds_protocol(runs, protocol, run_ids) is (newest is not None)


def test_run_list_is_the_scored_runs_without_their_counts(runs) -> None:
    listed = scored_run_list(runs)
    assert listed.equals(scored_runs(runs).drop(columns="verdicts")) and list(listed["id"]) == [3, 2, 1]


@pytest.mark.parametrize("run_ids", [pytest.param([1], id="judged"), pytest.param([2], id="rule-only"),
                                     pytest.param([1, 2, 3], id="three"), pytest.param([], id="none")])
def test_judges_and_default_run_are_the_same(runs, run_ids) -> None:
    assert judges_for(runs, run_ids) == old_judges_for(runs, run_ids)
    newest_first = sorted(run_ids, reverse=True)
    assert default_run(runs, newest_first) == old_default_run(runs, newest_first)


def _label(engine: Engine, response_id: int, author: str, kind: str, payload: dict) -> None:
    with Session(engine) as session:
        session.add(Annotation(kind=kind, target_type="response", target_id=response_id, author=author,
                               payload=payload, client_token=f"{kind}-{author}-{response_id}"))
        session.commit()


@pytest.mark.parametrize("labels", [
    pytest.param([], id="no-label"),
    pytest.param([("alice", "gold_label", {"constraints": {"c1": True}})], id="one-expert"),
    pytest.param([("alice", "gold_label", {"constraints": {"c1": True}}),
                  ("bob", "gold_label", {"constraints": {"c1": True}})], id="two-agree"),
    pytest.param([("alice", "gold_label", {"constraints": {"c1": True}}),
                  ("bob", "gold_label", {"constraints": {"c1": False}}),
                  ("admin", "adjudication", {"constraints": {"c1": False}})], id="adjudicated"),
])
def test_gold_and_expert_labels_are_the_same(tmp_path, labels) -> None:
    seeded = seeded_db(tmp_path)
    response = seeded.responses[("model-a", "E-gap")]
    for author, kind, payload in labels:
        _label(seeded.engine, response, author, kind, payload)
    for scope in (None, [seeded.run_id], [seeded.run_id + 1]):
        assert gold_labels(seeded.engine, scope) == old_gold_labels(seeded.engine, scope)
        assert expert_labels(seeded.engine, scope) == {
            rid: {a: ann.payload for a, ann in by.items()}
            for rid, by in effective_annotations(seeded.engine, "gold_label", None if scope is None else set(
                Session(seeded.engine).exec(select(Response.id).where(col(Response.run_id).in_(scope))).all()),
                "response").items()}
    assert default_run(seeded.engine, [seeded.run_id]) == old_default_run(seeded.engine, [seeded.run_id])


@pytest.mark.parametrize(("who", "overlap"), [
    pytest.param("alice", 0.0, id="alice-no-overlap"),
    pytest.param("alice", 0.5, id="alice-half-double-checked"),
    pytest.param("bob", 1.0, id="bob-all-double-checked"),
    pytest.param("admin", 0.25, id="admin-every-domain"),
])
def test_verification_queue_is_the_same(workspace, who, overlap) -> None:
    queue = verification_queue(workspace.engine, principal(who), overlap)
    assert (queue.instance_ids, queue.decided) == old_verification_queue(workspace.engine, principal(who), overlap)


@pytest.mark.parametrize("meta", [
    pytest.param(None, id="none"),
    pytest.param({"synthetic": True}, id="no-mark-key"),
    pytest.param({"llm_model": "m"}, id="model-without-parts"),
    pytest.param({"atomic_ids": ["a"], "llm_model": "m"}, id="constraints-added"),
    pytest.param({"query_origin": "generated", "query_generated_by": "q"}, id="drafted-query"),
    pytest.param({"rag_stress": {"generated": True, "method": "llm:w"}}, id="written-evidence"),
    pytest.param({"removed_atomics": [["x", "LLM edit"]]}, id="edited-set"),
    pytest.param({"bundle": {"generated": True, "edited_fact": "f"}}, id="generated-conflict"),
    pytest.param({GENERIC_KEY: [{"part": "p", "how": "written", "model": "g"}]}, id="generic"),
])
def test_marks_skip_only_metadata_without_their_keys(meta) -> None:
    from core.store import generated

    parts = ([generated.GeneratedPart("query", "drafted", str((meta or {}).get("query_generated_by") or ""))]
             if (meta or {}).get("query_origin") == "generated" else [])
    parts += generated._rag_stress_parts((meta or {}).get("rag_stress") or {})
    parts += generated._instruction_parts(meta or {}, 3)
    parts += generated._bundle_parts((meta or {}).get("bundle") or {}, str((meta or {}).get("llm_model") or ""))
    parts += generated._generic_parts((meta or {}).get(GENERIC_KEY) or [])
    assert generated_mark(meta, 3) == (generated.GeneratedMark(tuple(parts)) if parts else None)
