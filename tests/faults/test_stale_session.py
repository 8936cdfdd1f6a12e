"""A disabled (or demoted) admin's open tab cannot launch, cancel or prepare paid runs: every write re-reads the
account (active, current role) before acting, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from core.generation import registered_models, runs
from core.review.auth import PermissionDenied, Principal, create_user, now_utc, update_user
from core.services import runs as run_services
from core.store.models import Run
from tests.factories import seed_instances
from tests.pages.signin import sign_in

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "run_evaluation.py")
WRITES = {
    "launch_run": lambda engine, p: run_services.launch_run(engine, p, runs.RunOptions(models=["baseline:extractive"])),
    "stop_run": lambda engine, p: run_services.stop_run(engine, p, runs.create_run(engine, runs.RunOptions(
        models=["baseline:extractive"]))),
    "register_baselines": lambda engine, p: run_services.register_baselines(engine, p),
}


@pytest.fixture
def admin(engine, monkeypatch, tmp_path):
    monkeypatch.setenv("GAUNTLET_LOG_DIR", str(tmp_path / "logs"))
    seed_instances(engine, 3)
    registered_models.ensure_baselines(engine)
    create_user(engine, "tester", "admin", password="tester-pass-1")
    now = now_utc()
    return Principal(username="tester", role="admin", domains=(), login_at=now, last_seen=now)


@pytest.mark.parametrize("change, refusal", [
    pytest.param({"active": False}, "disabled", id="disabled"),
    pytest.param({"role": "viewer"}, "may not", id="demoted"),
])
@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_run_write_rechecks_the_account(engine, admin, change, refusal, write):
    update_user(engine, "tester", **change)
    with Session(engine) as session:
        before = [(r.id, r.status) for r in session.exec(select(Run))]
    with pytest.raises(PermissionDenied, match=refusal):
        WRITES[write](engine, admin)
    with Session(engine) as session:
        after = [(r.id, r.status) for r in session.exec(select(Run))]
    assert after[: len(before)] == before and all(status == "pending" for _, status in after)
    assert write != "launch_run" or after == before


def test_a_disabled_admins_open_tab_launches_nothing(engine, admin):
    at = sign_in(AppTest.from_file(PAGE, default_timeout=30), "admin")
    at.run()
    at.multiselect(key="run_models").set_value(["baseline:extractive"]).run()
    update_user(engine, "tester", active=False)
    at.button(key="run_launch").click().run()
    assert not at.exception, at.exception
    assert any("disabled" in e.value for e in at.error), [e.value for e in at.error]
    with Session(engine) as session:
        assert session.exec(select(Run)).all() == []
