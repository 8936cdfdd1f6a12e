"""kill -9 of a benchmark build: its spend row does not stay "building" forever. While the build process lives it
holds the build's lease (TTL 1 s, renewed by a heartbeat: still held 2.5 s on) and the row reads "building", and the next build's sweep leaves it
alone; once the process is killed, the pages read the row as interrupted without writing anything (row and lease
unchanged by the read), and the next build marks it failed with the reason. Both backends; the build is a real
`gauntlet misleading-evidence build` whose writer and checker models answer on loopback after 5 s."""

from __future__ import annotations

import os
import signal
import time

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from core.config import REPO_ROOT
from core.construction.build_lease import INTERRUPTED, sweep_interrupted_builds
from core.construction.cost import record_build
from core.generation import models_admin, runs
from core.store.leases import LEASE_TTL_ENV
from core.store.models import Lease, Run
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.app.test_run_spend import watch
from tests.factories import add_fake_server_model
from tests.faults.conftest import gauntlet, start, wait_until
from tests.misleading_evidence.conftest import DATA, SLICES

MODELS = ("writer", "checker")
TTL_S = 1.0  # the build's lease TTL: the heartbeat renews it every third


def build_rows(engine) -> list[Run]:
    with Session(engine) as session:
        return list(session.exec(select(Run).order_by(Run.id)))


def snapshot(engine) -> tuple:
    """Every run row and lease row as plain data: what a read must leave as it was."""
    with Session(engine) as session:
        return ([r.model_dump() for r in session.exec(select(Run).order_by(Run.id))],
                [lease.model_dump() for lease in session.exec(select(Lease).order_by(Lease.name))])


@pytest.fixture
def crashed_build(engine, db_url, tmp_path):
    """A build killed with SIGKILL while its first LLM call was in flight; the outcomes read before the kill."""
    servers = {name: FakeLLMServer(script=[ScriptRule(match="", reply="{}")], latency_ms=5000).start()
               for name in MODELS}
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(GAUNTLET_DATABASE_URL=db_url, GAUNTLET_SECRETS_FILE=str(tmp_path / "none.toml"),
               PYTHONPATH=str(REPO_ROOT), **{LEASE_TTL_ENV: str(TTL_S)})
    for name, server in servers.items():
        add_fake_server_model(engine, name, server.base_url, env)
    fmt, relative = SLICES["hotpotqa"]
    try:
        process = start(gauntlet("misleading-evidence", "build", str(DATA / relative), "--format", fmt, "--out",
                                 str(tmp_path / "stress.jsonl"), "--limit", "20", "--llm", "writer", "--generate",
                                 "--judge", "checker"), env)
        wait_until(lambda: servers["writer"].requests or process.poll() is not None, timeout=60,
                   what="the build's first LLM call")
        time.sleep(2.5 * TTL_S)  # past the lease's TTL: only the heartbeat keeps it
        assert process.poll() is None, process.communicate()[0]
        (row,) = build_rows(engine)
        alive = (models_admin.run_outcome(engine, row.id), sweep_interrupted_builds(engine))
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        for server in servers.values():
            server.stop()
    return row.id, alive


def test_a_killed_build_reads_interrupted_without_a_write_then_the_next_build_marks_it_failed(engine, crashed_build):
    build_id, (outcome, swept) = crashed_build
    assert (outcome, swept) == ("building", [])  # alive: its lease renewed, the sweep left it alone
    before = snapshot(engine)
    assert models_admin.run_outcome(engine, build_id) == runs.BUILD_INTERRUPTED
    assert dict(models_admin.run_choices(engine))[build_id].endswith(" · " + runs.BUILD_INTERRUPTED)
    at = AppTest.from_function(watch, args=(build_id,), default_timeout=30).run()  # the Run evaluation page's panel
    assert not at.exception, at.exception
    assert f"Run {build_id}: {runs.BUILD_INTERRUPTED}" in at.markdown[0].value
    assert "Cancel run" not in [b.label for b in at.button]  # nothing to cancel: the build's process is gone
    assert snapshot(engine) == before  # reading never writes
    assert before[0][0]["status"] == "running"

    spend = record_build(engine, "enterprise_rag next.jsonl", None, {"protocol": "enterprise_rag"})
    spend.finish("done")
    crashed, following = build_rows(engine)
    assert (crashed.id, crashed.status, crashed.finished_at is not None) == (build_id, "failed", True)
    assert crashed.message.startswith(INTERRUPTED) and crashed.reserved_usd == 0.0
    assert models_admin.run_outcome(engine, build_id) == "build failed"
    assert (following.id, following.status) == (spend.run_id, "done")
    assert models_admin.run_outcome(engine, following.id) == "build done"
