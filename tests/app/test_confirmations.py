"""Confirmations that outlive the rerun after a write (a toast and a line on the next run), tables that list what was
just written, and the watch panel's link to the run's results pages (issue 28 item 7)."""

from __future__ import annotations

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from core.generation import run_archive
from core.protocols.views import results_pages
from core.review.gold import draw_gold_sample, record_gold_label
from core.store.models import Instance, Response, Run
from tests.pages import test_workspace_flows as flows
from tests.pages.test_run_evaluation_page import open_models
from tests.pages.test_workspace_flows import _double_verify, _full_label, page_as
from tests.workspace_factories import principal

seeded = flows.seeded  # the seeded workspace database (fixture)


def confirmed(at: AppTest) -> list[str]:
    """What the page confirms on this run: its toasts and success lines."""
    return [t.value for t in at.toast] + [s.value for s in at.success]


def test_a_new_account_is_listed_and_confirmed(seeded):
    at = page_as("pages/users.py", "admin")
    at.text_input(key="new_username").set_value("dora")
    at.text_input(key="new_password").set_value("dora-pass-123456")
    next(b for b in at.button if b.label == "Create account").click().run()
    assert not at.exception, at.exception
    assert "dora" in set(at.dataframe[0].value["username"])
    assert confirmed(at) == ["Created dora.", "Created dora."]


def _gold_disagreement(seeded) -> tuple[str, str]:
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=8, experts=["alice", "bob"])
    rid = seeded.responses[("model-a", "E-conflict")]
    record_gold_label(seeded.engine, principal("alice"), rid, _full_label(seeded, rid, True), "a")
    record_gold_label(seeded.engine, principal("bob"), rid, _full_label(seeded, rid, False), "b")
    return f"adj_{rid}_conflict", f"adj_submit_{rid}"


def _verification_disagreement(seeded) -> tuple[str, str]:
    iid = _double_verify(seeded, "E-noisy", "accept", "reject")
    return f"vadj_decision_{iid}", f"vadj_submit_{iid}"


@pytest.mark.parametrize(("make", "tab", "value", "message"), [
    pytest.param(_gold_disagreement, "Disagreements", "1", "Gold label saved.", id="gold-label"),
    pytest.param(_verification_disagreement, "Verification disagreements", "reject", "Final decision saved.",
                 id="final-decision"),
])
def test_adjudication_confirmations_survive_the_rerun(seeded, make, tab, value, message):
    field, submit = make(seeded)
    at = page_as("pages/adjudicate.py", "admin", adj_tab=tab)
    at.radio(key=field).set_value(value)
    at.button(key=submit).click().run()
    assert not at.exception, at.exception
    assert confirmed(at) == [message, message]
    at.run()  # the next action: the confirmation is not repeated
    assert message not in confirmed(at)


def _run_with(seeded, protocol: str | None) -> int:
    """The seeded run (EnterpriseRAG), or a new run whose one done response is to a `protocol` instance, or (None) a
    run without responses."""
    if protocol == "enterprise_rag":
        return seeded.run_id
    with Session(seeded.engine) as session:
        run = Run(name=f"{protocol} run", status="done")
        session.add(run)
        session.flush()
        if protocol is not None:
            seeded_instance = session.get_one(Instance, seeded.instances["E-noisy"])
            instance = Instance(uid=f"{protocol}-1", domain_id=seeded_instance.domain_id, query="q?", protocol=protocol)
            session.add(instance)
            session.flush()
            model_id = session.get_one(Response, seeded.responses[("model-a", "E-noisy")]).model_id
            session.add(Response(run_id=run.id, model_id=model_id, instance_id=instance.id, status="done", text="A"))
        session.commit()
        return int(run.id)


@pytest.mark.parametrize(("protocol", "titles"), [
    pytest.param("enterprise_rag", ["Leaderboard"], id="enterprise-on-leaderboard"),
    pytest.param("kb_corruption", ["Stress tests"], id="ragstress-on-its-page"),
    pytest.param("domainrag", ["Domain abilities"], id="domainrag-on-its-page"),
    pytest.param("instruction_following", ["Leaderboard"], id="ifeval-on-leaderboard"),
    pytest.param(None, [], id="no-answers-no-page"),
])
def test_results_pages_of_a_run(seeded, protocol, titles):
    assert [p.title for p in results_pages(seeded.engine, _run_with(seeded, protocol))] == titles


def watch(run_id: int, outcome: str) -> None:
    """AppTest script: the end of the watch panel for one run."""
    from ui.result_links import results_links

    results_links(run_id, outcome)


@pytest.mark.parametrize(("outcome", "linked"), [
    pytest.param("done", True, id="done-links"),
    pytest.param("done with failures", True, id="failures-link"),
    pytest.param("generating", False, id="generating-no-link"),
])
def test_watch_panel_ends_with_a_link_to_the_results(seeded, outcome, linked):
    at = AppTest.from_function(watch, args=(seeded.run_id, outcome), default_timeout=30).run()
    assert not at.exception, at.exception
    shown = [m.value for m in at.markdown] + [p.proto.label for p in at.get("page_link")]
    expected = f"See run {seeded.run_id} on Leaderboard"
    assert any(expected in text for text in shown) is linked


def outcome_watcher() -> None:
    """AppTest script: the watch panel's outcome check with the outcome the test puts in the session; counts runs."""
    import streamlit as st

    from ui.result_links import rerun_on_new_outcome

    st.session_state["runs_seen"] = st.session_state.get("runs_seen", 0) + 1
    rerun_on_new_outcome(7, st.session_state["outcome"])


@pytest.mark.parametrize(("then", "runs"), [
    pytest.param("waiting to start", 2, id="same-outcome-no-rerun"),
    pytest.param("done", 3, id="new-outcome-reruns-the-page"),
])
def test_a_new_outcome_redraws_the_page(then, runs):
    at = AppTest.from_function(outcome_watcher, default_timeout=30)
    at.session_state["outcome"] = "waiting to start"
    at.run()
    at.session_state["outcome"] = then
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["runs_seen"] == runs and at.session_state["watch_outcome_7"] == then


def _run_named(seeded, name: str) -> int:
    with Session(seeded.engine) as session:
        return int(session.exec(select(Run).where(Run.name == name)).one().id)


def _save_model(at: AppTest, seeded) -> str:
    open_models(at)
    at.text_input(key="model_name_new").set_value("m-new")
    at.text_input(key="model_url_env_new").set_value("M_URL")
    next(b for b in at.button if b.label == "Save model").click().run()
    return "Saved model m-new."


def _hide(at: AppTest, seeded) -> str:
    next(b for b in at.button if b.label.startswith("Hide run")).click().run()
    return f"Run {_run_named(seeded, 'seed run')} hidden"


def _show_again(at: AppTest, seeded) -> str:
    run_archive.set_hidden(seeded.engine, _run_named(seeded, "seed run"), True, None, "admin")
    at.run()
    next(b for b in at.button if b.label == "Show it again").click().run()
    return f"Run {_run_named(seeded, 'seed run')} is shown again."


def _delete(at: AppTest, seeded) -> str:
    run_archive.set_hidden(seeded.engine, _run_named(seeded, "seed run"), True, None, "admin")
    at.run()
    next(c for c in at.checkbox if c.label.startswith("Delete run")).check().run()
    next(b for b in at.button if b.label == "Delete permanently").click().run()
    return "Deleted run"


def _blinding_off(at: AppTest, seeded) -> str:
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=1, experts=["alice", "bob"])
    at.run()
    next(b for b in at.button if b.label.startswith("Turn blinding off")).click().run()
    return ": blinding off ("


@pytest.mark.parametrize(("page", "act"), [
    pytest.param("pages/run_evaluation.py", _save_model, id="model-saved"),
    pytest.param("pages/run_evaluation.py", _hide, id="run-hidden"),
    pytest.param("pages/run_evaluation.py", _show_again, id="run-shown-again"),
    pytest.param("pages/run_evaluation.py", _delete, id="run-deleted"),
    pytest.param("pages/adjudicate.py", _blinding_off, id="blinding-off"),
])
def test_write_confirmations_survive_the_rerun(seeded, monkeypatch, tmp_path, page, act):
    monkeypatch.setenv("GAUNTLET_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    at = page_as(page, "admin")
    expected = act(at, seeded)
    assert not at.exception, at.exception
    assert any(expected in t.value for t in at.toast), [t.value for t in at.toast]
    assert any(expected in s.value for s in at.success), [s.value for s in at.success]
    at.run()  # the next action: the confirmation is not repeated
    assert not any(expected in text for text in confirmed(at))
