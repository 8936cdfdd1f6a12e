"""The role x page x write-action matrix (AppTest): every write a page offers is refused server-side without the role.

For each write and each role, a user whose role may open the page renders it; then an admin changes that account's
role in the database to the role under test (the page stays open: a stale page, or a forged request) and the write is
clicked. The write happens exactly when the permission table allows the action to that role; otherwise the page shows
the refusal and nothing is written. A role that may not open the page gets the refusal and no button at all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlmodel import Session, func, select
from streamlit.testing.v1 import AppTest

from core.generation import jobs, registered_models, run_archive, runs
from core.permissions import ACTIONS, ROLES, allowed, may_open
from core.review.auth import get_user, update_user
from core.review.gold import draw_gold_sample
from core.store.models import Annotation, Assignment, Model, Response, Run
from tests.app.test_run_admin import fail_every_item
from tests.workspace_factories import principal, seeded_db

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Write:
    """One write a page offers: the action it re-checks, who opens the page, how to do it, how to see it happened."""

    page: str
    action: str
    account: str
    act: Callable[[AppTest, object], None]
    wrote: Callable[[object], bool]
    setup: Callable[[object], None] = field(default=lambda seeded: None)
    opened: tuple[str, ...] = ()  # panels (expander keys) the user opened before the role changed


def click(at: AppTest, label: str) -> None:
    next(b for b in at.button if b.label.startswith(label)).click().run()


def count(seeded, query) -> int:
    with Session(seeded.engine) as session:
        return session.exec(query).one()


def run_where(seeded, name: str) -> Run | None:
    with Session(seeded.engine) as session:
        return session.exec(select(Run).where(Run.name == name)).first()


def _create_user(at, seeded):
    at.text_input(key="new_username").set_value("zed")
    at.text_input(key="new_password").set_value("zed-pass-123")
    click(at, "Create account")


def _change_user(at, seeded):
    at.selectbox(key="edit_username").set_value("vic").run()
    at.selectbox(key=f"edit_role_{get_user(seeded.engine, 'vic').id}").set_value("analyst")
    click(at, "Save changes")


def _save_model(at, seeded):
    at.text_input(key="model_name_new").set_value("m-new")
    at.text_input(key="model_url_env_new").set_value("M_URL")
    click(at, "Save model")


def _choose_and(button: str):
    def act(at, seeded):
        at.number_input(key="run_limit").set_value(1)
        at.text_input(key="run_name").set_value("matrix")
        at.multiselect(key="run_models").set_value(["baseline:extractive"]).run()
        at.button(key=button).click().run()
    return act


def _pending_run(seeded) -> None:
    registered_models.ensure_baselines(seeded.engine)
    runs.create_run(seeded.engine, runs.RunOptions(models=["baseline:extractive"], name="matrix", limit=1))


def _failed_run(seeded) -> None:
    _pending_run(seeded)
    fail_every_item(seeded.engine, run_where(seeded, "matrix").id)


def _hide_seed_run(seeded) -> None:
    run_archive.set_hidden(seeded.engine, run_where(seeded, "seed run").id, True, None, "admin")


def _delete(at, seeded):
    next(c for c in at.checkbox if c.label.startswith("Delete run")).check().run()
    click(at, "Delete permanently")


def _label(at, seeded):
    for radio in at.radio:
        radio.set_value(radio.options[-1])
    click(at, "Submit label")


def _assign_sample(seeded) -> None:
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=1, experts=["alice", "bob"])


WRITES = {
    "users-create": Write("pages/users.py", "manage_users", "admin", _create_user,
                          lambda s: get_user(s.engine, "zed") is not None),
    "users-change": Write("pages/users.py", "manage_users", "admin", _change_user,
                          lambda s: get_user(s.engine, "vic").role == "analyst"),
    "run-register-baselines": Write("pages/run_evaluation.py", "register_models", "admin",
                                    lambda at, s: at.button(key="run_add_baselines").click().run(),
                                    lambda s: count(s, select(func.count()).where(Model.is_baseline)) == 2,
                                    opened=("run_models_panel",)),
    "run-save-model": Write("pages/run_evaluation.py", "register_models", "admin", _save_model,
                            lambda s: count(s, select(func.count()).where(Model.name == "m-new")) == 1,
                            opened=("run_models_panel",)),
    "run-preflight": Write("pages/run_evaluation.py", "launch_run", "admin", _choose_and("run_preflight"),
                           lambda s: False, setup=lambda s: registered_models.ensure_baselines(s.engine)),
    "run-launch": Write("pages/run_evaluation.py", "launch_run", "admin", _choose_and("run_launch"),
                        lambda s: run_where(s, "matrix") is not None, setup=lambda s: registered_models.ensure_baselines(s.engine)),
    "run-cancel": Write("pages/run_evaluation.py", "cancel_run", "admin",
                        lambda at, s: click(at, "Cancel run"), lambda s: run_where(s, "matrix").status == "cancelled",
                        setup=_pending_run),
    "run-retry": Write("pages/run_evaluation.py", "launch_run", "admin", lambda at, s: click(at, "Retry the"),
                       lambda s: count(s, select(func.count()).where(Response.status == "failed")) == 0,
                       setup=_failed_run),
    "run-hide": Write("pages/run_evaluation.py", "hide_run", "admin", lambda at, s: click(at, "Hide run"),
                      lambda s: run_where(s, "seed run").hidden_at is not None),
    "run-delete": Write("pages/run_evaluation.py", "delete_run", "admin", _delete,
                        lambda s: run_where(s, "seed run") is None, setup=_hide_seed_run),
    "adjudicate-draw-sample": Write("pages/adjudicate.py", "draw_gold_sample", "admin",
                                    lambda at, s: click(at, "Draw sample and assign"),
                                    lambda s: count(s, select(func.count()).select_from(Assignment)) > 0),
    "adjudicate-blinding-off": Write("pages/adjudicate.py", "set_sample_blinding", "admin",
                                     lambda at, s: click(at, "Turn blinding off"),
                                     lambda s: count(s, select(func.count()).select_from(Assignment)
                                                     .where(Assignment.blind == False)) > 0,  # noqa: E712
                                     setup=_assign_sample),
    "verify-accept": Write("pages/verify_instances.py", "verify_instance", "alice", lambda at, s: click(at, "Accept"),
                           lambda s: count(s, select(func.count()).where(Annotation.kind == "verification")) > 0),
    "label-submit": Write("pages/label_responses.py", "label_response", "alice", _label,
                          lambda s: count(s, select(func.count()).where(Annotation.kind == "gold_label",
                                                                        Annotation.author == "alice")) > 0,
                          setup=_assign_sample),
}
CASES = [pytest.param(name, role, id=f"{name}-{role}") for name in WRITES for role in ROLES]


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    monkeypatch.setenv("GAUNTLET_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    yield s
    for run in runs.recent_runs(s.engine):  # let a launched job finish before its database goes away
        jobs.wait_for_exit((run.config or {}).get("pid"), timeout=60)


def page_as(path: str, account: str, role: str | None = None, opened: tuple[str, ...] = ()) -> AppTest:
    at = AppTest.from_file(str(ROOT / path), default_timeout=60)
    who = principal(account)
    at.session_state["gauntlet_principal"] = who if role is None else type(who)(
        who.username, role, who.domains, who.login_at, who.last_seen)
    at.run()
    for panel in opened:  # opened by a click on its header: a rerun draws its body
        at.session_state[panel] = True
    return at.run() if opened else at


def test_every_action_is_in_the_matrix():
    offered = {w.action for w in WRITES.values()}
    elsewhere = {"review_all_domains", "adjudicate", "export_labels", "import_labels", "build_benchmark",
                 "import_benchmark"}  # file uploads, downloads and domain scope: test_auth re-checks them in core
    assert offered | elsewhere == set(ACTIONS)


@pytest.mark.parametrize(("name", "role"), CASES)
def test_a_write_happens_only_with_the_role(seeded, name, role):
    write = WRITES[name]
    write.setup(seeded)
    at = page_as(write.page, write.account, opened=write.opened)
    assert not at.exception, at.exception
    update_user(seeded.engine, write.account, role=role)
    write.act(at, seeded)
    assert not at.exception, at.exception
    refusals = [e.value for e in at.error if "may not" in e.value]
    if allowed(role, write.action):
        assert not refusals, refusals
        if name == "run-preflight":
            assert any("baseline:extractive: offline baseline" in s.value for s in at.success)
        else:
            assert write.wrote(seeded), f"{role} should have been able to {ACTIONS[write.action].what}"
    else:
        rule = ACTIONS[write.action]
        expected = f"Your role ({role}) may not {rule.what}; allowed: {', '.join(sorted(rule.roles))}."
        assert refusals == [expected], [e.value for e in at.error]
        assert not write.wrote(seeded)


@pytest.mark.parametrize(("name", "role"), [c for c in CASES if not may_open(c.values[1], WRITES[c.values[0]].page)])
def test_a_role_that_may_not_open_the_page_gets_no_button(seeded, name, role):
    at = page_as(WRITES[name].page, WRITES[name].account, role)
    assert [e.value for e in at.error] == [f"Your role ({role}) may not open this page."]
    assert not at.button and not at.text_input and not at.multiselect
