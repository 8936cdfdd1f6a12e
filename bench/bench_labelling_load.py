"""Labelling load: N simulated experts label concurrently for S seconds through the real save path, on SQLite and on
PostgreSQL; reports save latency (p50/p95), saves per second, and lost and duplicated labels.

Each expert is an active `expert` account with every response of a synthetic run (bench/make_synthetic_results.py)
assigned. It loops like the Label responses page (ui/workspace.py): read its queue (`gold_queue`), open a response
(`load_response`, `my_label`), then save a label with a fresh client token through `record_gold_label` (the
session/role re-check, the assignment check, payload validation, the idempotent append); a share `--double-submit`
of saves is submitted a second time with the same token (a double click), which must return the stored row. Only the
save is timed as save latency; the page reads are timed apart. No think time by default: this is the backend's
capacity (real experts need ~30 s a label, so 20 of them make under one save per second).

Afterwards every expert's intended saves (client token, response, returned id) are compared with the rows in the
database: lost = an intended token with no row (or a row for another response/author), duplicated = a token stored
more than once, phantom = a row of these experts that nobody intended.

Experts run as threads sharing one engine, as the Streamlit server runs its sessions (`--mode processes` runs one
process per expert, each with its own engine, to take the GIL out of the picture). CPU is this process's
process_time plus RUSAGE_CHILDREN (worker processes); the PostgreSQL server's own CPU is not counted.
Both backends run in --rounds alternating rounds (A/B interleaved, each round's experts start together).
Run: .venv/bin/python bench/bench_labelling_load.py [--backends sqlite,postgresql] [--experts 20] [--seconds 120]
     [--rounds 4] [--mode threads|processes] [--instances 50] [--models 3] [--double-submit 0.05] [--think-ms 0] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from bench.make_synthetic_results import DOMAINS, make_results
from core.review.annotations import new_client_token
from core.review.auth import Principal, create_user
from core.review.gold import expected_fields, gold_queue, load_response, my_label, record_gold_label
from core.store.db import make_engine
from core.store.models import Annotation, Assignment, Response

BACKENDS = ("sqlite", "postgresql")


def expert_names(count: int) -> list[str]:
    """The simulated experts' usernames."""
    return [f"expert{i:02d}" for i in range(1, count + 1)]


def seed_experts(engine: Engine, count: int) -> list[str]:
    """Create `count` expert accounts (SSO-only, every domain) and assign each every response, in a shuffled order."""
    names = expert_names(count)
    with Session(engine) as session:
        responses = list(session.exec(select(Response.id).order_by(Response.id)).all())
    for number, name in enumerate(names):
        create_user(engine, name, "expert", None, list(DOMAINS))
        order = random.Random(number).sample(responses, len(responses))
        with Session(engine) as session:
            session.add_all(Assignment(kind="gold_label", target_id=rid, assignee=name, batch="load") for rid in order)
            session.commit()
    return names


def label_payload(bundle, rng: random.Random) -> dict[str, Any]:
    """A complete label for a response's instance, as the form submits it (random yes/no answers)."""
    cids, wants_refusal, wants_conflict = expected_fields(bundle)
    payload: dict[str, Any] = {"constraints": {c: rng.random() < 0.7 for c in cids}, "note": ""}
    if wants_refusal:
        payload["valid_refusal"] = int(rng.random() < 0.5)
    if wants_conflict:
        payload["conflict_recognized"] = int(rng.random() < 0.5)
    return payload


@dataclass
class ExpertLog:
    """What one expert did: every save it intended (token, response, returned id), latencies, errors."""

    name: str
    saves: list[tuple[str, int, int]] = field(default_factory=list)
    save_ms: list[float] = field(default_factory=list)
    page_ms: list[float] = field(default_factory=list)
    resubmits: int = 0
    resubmits_mismatched: int = 0
    errors: list[str] = field(default_factory=list)


def expert_session(url: str, name: str, seconds: float, seed: int, double_submit: float, think_ms: float,
                   engine: Engine | None = None, start: threading.Barrier | None = None) -> ExpertLog:
    """One expert labelling for `seconds` through the page's reads and the real save path."""
    engine = engine or make_engine(url)
    rng = random.Random(f"{seed}:{name}")
    log = ExpertLog(name)
    now = datetime.now(UTC)
    principal = Principal(name, "expert", tuple(DOMAINS), now, now)
    if start is not None:
        start.wait()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        principal = Principal(name, "expert", tuple(DOMAINS), now, datetime.now(UTC))
        try:
            started = time.perf_counter()
            queue = gold_queue(engine, principal)
            with Session(engine) as session:
                assigned = session.exec(select(Assignment.target_id).where(Assignment.assignee == name)).all()
            target = queue.instance_ids[0] if queue.instance_ids else rng.choice(assigned)
            bundle = load_response(engine, target).bundle
            my_label(engine, principal, target)
            log.page_ms.append((time.perf_counter() - started) * 1000)
            payload, token = label_payload(bundle, rng), new_client_token()
            started = time.perf_counter()
            stored, _ = record_gold_label(engine, principal, target, payload, token)
            log.save_ms.append((time.perf_counter() - started) * 1000)
            log.saves.append((token, target, stored))
            if rng.random() < double_submit:
                again, created = record_gold_label(engine, principal, target, payload, token)
                log.resubmits += 1
                log.resubmits_mismatched += int(created or again != stored)
        except Exception as exc:  # noqa: BLE001 - a failed save is a finding, counted and reported
            log.errors.append(f"{type(exc).__name__}: {exc}"[:300])
        if think_ms:
            time.sleep(rng.expovariate(1 / think_ms) / 1000)
    return log


@dataclass
class Audit:
    """Intended saves compared with the stored rows."""

    intended: int
    lost: int
    duplicated: int
    phantom: int


def audit(engine: Engine, logs: list[ExpertLog]) -> Audit:
    """Lost (intended, not stored as intended), duplicated (a token stored twice) and phantom (unintended) labels."""
    intended = {token: (log.name, target, stored) for log in logs for token, target, stored in log.saves}
    names = [log.name for log in logs]
    with Session(engine) as session:
        rows = session.exec(select(Annotation.client_token, Annotation.author, Annotation.target_id, Annotation.id)
                            .where(Annotation.kind == "gold_label", col(Annotation.author).in_(names))).all()
        duplicated = session.exec(select(func.count()).select_from(
            select(Annotation.client_token).where(col(Annotation.author).in_(names))
            .group_by(Annotation.client_token).having(func.count() > 1).subquery())).one()
    stored = {token: (author, target, row_id) for token, author, target, row_id in rows}
    lost = sum(stored.get(token) != want for token, want in intended.items())
    return Audit(len(intended), lost, duplicated, len(set(stored) - set(intended)))


def percentile(values: list[float], share: float) -> float:
    """The `share` quantile (0..1) of `values`, by linear interpolation; NaN when empty."""
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=1000, method="inclusive")[round(share * 1000) - 1]


def run_experts(url: str, names: list[str], seconds: float, seed: int, double_submit: float = 0.05,
                think_ms: float = 0.0, mode: str = "threads") -> list[ExpertLog]:
    """Every expert labelling at once (threads sharing one engine, or one process each); their logs."""
    if mode == "processes":
        with ProcessPoolExecutor(max_workers=len(names)) as pool:
            futures = [pool.submit(expert_session, url, name, seconds, seed, double_submit, think_ms) for name in names]
            return [f.result() for f in futures]
    engine = make_engine(url)
    start = threading.Barrier(len(names))
    try:
        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            futures = [pool.submit(expert_session, url, name, seconds, seed, double_submit, think_ms, engine, start)
                       for name in names]
            return [f.result() for f in futures]
    finally:
        engine.dispose()


@contextmanager
def backend_url(backend: str, workdir: Path) -> Iterator[str]:
    """A fresh empty database URL on `backend` (PostgreSQL: a throwaway loopback cluster)."""
    if backend == "sqlite":
        workdir.mkdir(parents=True, exist_ok=True)
        yield f"sqlite:///{workdir / 'load.db'}"
        return
    from core.testing.postgres import create_database, temporary_cluster, wait_ready

    with temporary_cluster() as cluster:
        wait_ready(cluster)
        yield create_database(cluster, "load")


def _cpu() -> float:
    return time.process_time() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime + \
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_stime


def summarise(backend: str, logs: list[ExpertLog], result: Audit, wall: float, cpu: float) -> dict[str, Any]:
    """The figures of one backend from its experts' logs and the audit."""
    saves = [ms for log in logs for ms in log.save_ms]
    pages = [ms for log in logs for ms in log.page_ms]
    errors = [e for log in logs for e in log.errors]
    return {
        "backend": backend, "saves": len(saves), "saves_per_s": len(saves) / wall, "wall_s": wall, "cpu_s": cpu,
        "save_p50_ms": percentile(saves, 0.5), "save_p95_ms": percentile(saves, 0.95),
        "save_max_ms": max(saves, default=float("nan")),
        "page_p50_ms": percentile(pages, 0.5), "page_p95_ms": percentile(pages, 0.95),
        "resubmits": sum(log.resubmits for log in logs),
        "resubmits_mismatched": sum(log.resubmits_mismatched for log in logs),
        "lost": result.lost, "duplicated": result.duplicated, "phantom": result.phantom, "errors": len(errors),
        "first_error": errors[0] if errors else "",
    }


def measure(backends: list[str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Seed one database per backend, then run the experts on each in turn for `--rounds` rounds (the order
    alternating, so both share the machine's load), audit each; the figures per backend."""
    with tempfile.TemporaryDirectory(prefix="gauntlet-load-") as tmp, ExitStack() as stack:
        urls = {b: stack.enter_context(backend_url(b, Path(tmp) / b)) for b in backends}
        names = {}
        for backend, url in urls.items():
            make_results(url, n_models=args.models, n_instances=args.instances, seed=args.seed, with_baselines=False)
            engine = make_engine(url)
            names[backend] = seed_experts(engine, args.experts)
            engine.dispose()
        logs: dict[str, list[ExpertLog]] = {b: [] for b in backends}
        spent = {b: [0.0, 0.0] for b in backends}
        for number in range(args.rounds):
            for backend in backends if number % 2 == 0 else backends[::-1]:
                cpu, wall = _cpu(), time.perf_counter()
                logs[backend] += run_experts(urls[backend], names[backend], args.seconds / args.rounds,
                                             args.seed + number, args.double_submit, args.think_ms, args.mode)
                spent[backend][0] += time.perf_counter() - wall
                spent[backend][1] += _cpu() - cpu
        rows = []
        for backend, url in urls.items():
            engine = make_engine(url)
            rows.append(summarise(backend, logs[backend], audit(engine, logs[backend]), *spent[backend]))
            engine.dispose()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated: sqlite,postgresql")
    parser.add_argument("--experts", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--mode", choices=("threads", "processes"), default="threads")
    parser.add_argument("--instances", type=int, default=50)
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--double-submit", type=float, default=0.05)
    parser.add_argument("--think-ms", type=float, default=0.0, help="mean pause between labels (exponential)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=4, help="alternate the backends this many times")
    args = parser.parse_args()
    columns = ("backend", "saves", "saves_per_s", "save_p50_ms", "save_p95_ms", "save_max_ms", "page_p50_ms",
               "page_p95_ms", "cpu_s", "resubmits", "resubmits_mismatched", "lost", "duplicated", "phantom", "errors")
    print(f"{args.experts} experts x {args.seconds:g} s per backend in {args.rounds} alternating rounds, {args.mode}, "
          f"think {args.think_ms:g} ms, double submits {args.double_submit:.0%}")
    print(" ".join(f"{c:>12}" for c in columns))
    for row in measure([b.strip() for b in args.backends.split(",")], args):
        print(" ".join(f"{row[c]:>12.1f}" if isinstance(row[c], float) else f"{row[c]:>12}" for c in columns))
        if row["first_error"]:
            print(f"  first error: {row['first_error']}")


if __name__ == "__main__":
    main()
