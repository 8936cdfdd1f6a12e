"""AppTest: the expert workspace behaves like an annotation tool: a confirmation after each decision, undo, skip,
previous, revisiting and re-labelling, the needs-edit follow-up queue, auto-satisfied conditional constraints and
empty states that say what to do next."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from core.review.gold import draw_gold_sample, my_label, record_gold_label
from core.review.verification import record_verification
from core.store.models import Annotation, Constraint, Instance
from tests.pages.test_workspace_flows import _full_label, page_as
from tests.workspace_factories import principal, seeded_db

ROOT = Path(__file__).resolve().parents[2]
VERIFY, LABEL = "pages/verify_instances.py", "pages/label_responses.py"


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    monkeypatch.setenv("GAUNTLET_VERIFY_OVERLAP", "0")
    return s


def text(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info])


def current_uid(at: AppTest, seeded) -> str:
    ids = {v: k for k, v in seeded.instances.items()}
    return ids[next(int(b.key.rsplit("_", 1)[1]) for b in at.button if (b.key or "").startswith("v_accept_"))]


def by_label(widgets, start: str):
    """The one widget whose label starts with `start` (pre-filled forms key their inputs by the label revised)."""
    (found,) = [w for w in widgets if w.label.startswith(start)]
    return found


def _status(seeded, uid):
    with Session(seeded.engine) as s:
        return s.get(Instance, seeded.instances[uid]).status


def test_decision_is_confirmed_and_can_be_undone(seeded):
    at = page_as(VERIFY, "alice")
    assert current_uid(at, seeded) == "E-noisy"
    at.button(key=f"v_reject_{seeded.instances['E-noisy']}").click().run()
    assert [t.value for t in at.toast] == ["E-noisy v1: reject recorded."]
    assert "Last: E-noisy v1: reject recorded" in text(at) and current_uid(at, seeded) == "E-gap"
    assert _status(seeded, "E-noisy") == "rejected"
    at.button(key="v_undo").click().run()
    assert not at.exception and [t.value for t in at.toast] == ["Undone: E-noisy v1: reject; status now unverified."]
    assert _status(seeded, "E-noisy") == "unverified" and current_uid(at, seeded) == "E-noisy"  # reopened
    with Session(seeded.engine) as s:
        assert [a.kind for a in s.exec(select(Annotation)).all()] == ["verification", "retraction"]


def test_skip_moves_to_the_end_and_previous_reopens(seeded):
    at = page_as(VERIFY, "alice")
    assert at.button(key="v_prev").disabled
    at.button(key="v_skip").click().run()
    assert current_uid(at, seeded) == "E-gap"
    at.button(key=f"v_accept_{seeded.instances['E-gap']}").click().run()
    assert current_uid(at, seeded) == "E-conflict"
    at.button(key="v_prev").click().run()  # the decided E-gap, pre-filled with my decision
    assert current_uid(at, seeded) == "E-gap" and "You decided **accept**" in text(at)
    at.button(key="v_back").click().run()
    at.button(key=f"v_accept_{seeded.instances['E-conflict']}").click().run()
    assert current_uid(at, seeded) == "E-noisy"  # the skipped one came back last
    assert "You skipped this instance earlier" in text(at)


def test_revisit_a_decision_and_decide_again(seeded):
    record_verification(seeded.engine, principal("alice"), seeded.instances["E-gap"], consistency="inconsistent",
                        context_valid=True, decision="reject", consistency_note="first look", client_token="t1",
                        overlap=0.0)
    at = page_as(VERIFY, "alice")
    at.segmented_control(key="v_view").set_value("mine").run()
    assert at.dataframe[0].value["instance"].tolist() == ["E-gap"]
    iid = seeded.instances["E-gap"]
    assert by_label(at.radio, "Can the query be answered").value == "inconsistent"
    assert by_label(at.text_input, "Note on consistency").value == "first look"
    at.button(key=f"v_accept_{iid}").click().run()
    assert _status(seeded, "E-gap") == "accepted"
    with Session(seeded.engine) as s:
        assert len(s.exec(select(Annotation).where(Annotation.author == "alice")).all()) == 2  # both kept


def test_needs_edit_follow_up_shows_why_and_saves_a_new_version(seeded):
    record_verification(seeded.engine, principal("alice"), seeded.instances["E-gap"], consistency="consistent",
                        context_valid=False, decision="needs_edit", context_note="doc 2 answers the query",
                        client_token="t1", overlap=0.0)
    at = page_as(VERIFY, "bob")
    at.segmented_control(key="v_view").set_value("needs_edit").run()
    assert "Context note: doc 2 answers the query" in text(at)
    iid = seeded.instances["E-gap"]
    at.selectbox(key=f"v_role_{iid}_E-gap-d2").set_value("noise")
    at.button(key=f"v_accept_{iid}").click().run()
    assert not at.exception
    with Session(seeded.engine) as s:
        versions = s.exec(select(Instance).where(Instance.uid == "E-gap").order_by(Instance.version)).all()
    assert [(v.version, v.status) for v in versions] == [(1, "accepted"), (2, "accepted")]
    assert "No instance waits for a follow-up edit." in [x.value for x in at.success]


def test_label_responses_before_a_sample_says_what_to_do(seeded):
    at = page_as(LABEL, "alice")
    (info,) = at.info
    assert "none has been assigned to you yet" in info.value and "Draw a sample" in info.value
    assert not at.get("progress")


def _add_conditional(seeded, uid: str) -> None:
    with Session(seeded.engine) as s:
        s.add(Constraint(instance_id=seeded.instances[uid], position=2, cid="c3", text="Say the documents lack it.",
                         category="knowledge_protocol", sub_dimension="boundary", judge_method="llm", precondition="gap"))
        s.commit()


def test_labelling_auto_satisfies_skips_undoes_and_relabels(seeded):
    for uid in seeded.instances:
        _add_conditional(seeded, uid)
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=6, experts=["alice", "bob"])
    at = page_as(LABEL, "alice")
    first = next(int(b.key.rsplit("_", 1)[1]) for b in at.button if (b.key or "").startswith("l_submit_"))
    keys = {r.key for r in at.radio}
    mode = "gap" if any(k.endswith("_refusal") for k in keys) else "other"
    assert (f"l_{first}_c_c3" in keys) is (mode == "gap")  # asked only where it can apply
    if mode != "gap":
        assert "satisfied automatically: applies only to gap instances" in text(at)
    at.button(key="l_skip").click().run()
    second = next(int(b.key.rsplit("_", 1)[1]) for b in at.button if (b.key or "").startswith("l_submit_"))
    assert second != first
    for r in at.radio:
        r.set_value(r.options[0])
    at.button(key=f"l_submit_{second}").click().run()
    assert at.toast and at.toast[0].value.startswith("label on ") and my_label(seeded.engine, principal("alice"), second)
    at.button(key="l_undo").click().run()
    assert my_label(seeded.engine, principal("alice"), second) is None
    record_gold_label(seeded.engine, principal("alice"), second, _full_label(seeded, second, True), "again")  # c3: yes is accepted
    at.segmented_control(key="l_view").set_value("mine").run()
    assert at.dataframe[0].value["response"].tolist() == [second]
    assert by_label(at.radio, "`c1`").value == "yes"  # pre-filled with the standing label
    by_label(at.radio, "`c1`").set_value("no")
    at.button(key=f"l_submit_{second}").click().run()
    assert my_label(seeded.engine, principal("alice"), second)["constraints"]["c1"] is False
    history = at.dataframe[-1].value
    assert history["counts"].tolist() == ["no (undone)", "no (replaced)", "yes (latest)"]


def test_admin_sees_per_expert_progress_and_uncovered_domains(seeded):
    record_verification(seeded.engine, principal("carol"), seeded.instances["M-noisy"], consistency="consistent",
                        context_valid=True, decision="accept", client_token="c1", overlap=0.0)
    at = page_as("pages/adjudicate.py", "admin", adj_tab="Expert progress")
    progress = next(df.value for df in at.dataframe if "to verify" in df.value.columns).set_index("expert")
    assert progress.loc["carol", ["verified", "to verify", "labels done"]].tolist() == [1, 0, "none assigned"]
    assert progress.loc["alice", ["verified", "to verify", "last active"]].tolist() == [0, 3, "never"]
    at.session_state["adj_tab"] = "Draw a sample"
    at.run()
    at.button[0].click().run()  # draw with every expert: Medical has carol only
    assert not at.exception
    warning = next(w.value for w in at.warning if "Not sampled" in w.value)
    assert "Medical (2 responses)" in warning


def test_judge_alignment_without_labels_says_how_to_get_them(seeded):
    at = page_as("pages/judge_alignment.py", "ana")
    info = " ".join(i.value for i in at.info)
    assert "No gold labels on these runs yet" in info and "Draw a sample" in info and "Label responses" in info
    assert "No judge has scored these runs yet" in info


def _gold_disagreement(seeded) -> None:
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=8, experts=["alice", "bob"])
    rid = seeded.responses[("model-a", "E-conflict")]
    record_gold_label(seeded.engine, principal("alice"), rid, _full_label(seeded, rid, True), "a")
    record_gold_label(seeded.engine, principal("bob"), rid, _full_label(seeded, rid, False), "b")


def _shown_once(button) -> bool:
    """Streamlit draws the shortcut hint beside the label: the label must not spell it too."""
    squeeze = str.maketrans("", "", " +()")
    return button.proto.shortcut.lower().translate(squeeze) not in button.label.lower().translate(squeeze)


@pytest.mark.parametrize(("page", "who", "prepare", "expected"), [
    pytest.param(VERIFY, "alice", lambda seeded: None, {"Accept", "Needs edit", "Reject", "Skip", "Previous"},
                 id="verify"),
    pytest.param(LABEL, "alice", lambda seeded: draw_gold_sample(
        seeded.engine, principal("admin"), seeded.run_id, n=6, experts=["alice", "bob"]), {"Submit label", "Skip"},
                 id="label"),
    pytest.param("pages/adjudicate.py", "admin", _gold_disagreement, {"Save gold label"}, id="adjudicate"),
])
def test_shortcut_hint_is_not_repeated_in_the_label(seeded, page, who, prepare, expected):
    prepare(seeded)
    at = page_as(page, who, adj_tab="Disagreements")  # the tab Adjudicate's shortcut is on; other pages ignore it
    with_shortcut = [b for b in at.button if b.proto.shortcut]
    assert expected <= {b.label for b in with_shortcut}, [b.label for b in with_shortcut]
    assert all(_shown_once(b) for b in with_shortcut), [(b.label, b.proto.shortcut) for b in with_shortcut]
