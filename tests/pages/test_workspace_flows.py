"""AppTest: verifying an instance, labelling a response, adjudicating labels and verifications, the alignment tables,
users, inert XSS."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from core.review.auth import get_user
from core.review.gold import draw_gold_sample, record_gold_label
from core.review.verification import record_verification
from core.store.models import Annotation, Instance
from tests.workspace_factories import add_verdicts, principal, seeded_db

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("<script", "onerror", "javascript:")


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    return s


def page_as(path: str, who: str, **state: object) -> AppTest:
    """`path` run as `who`, with `state` in st.session_state first (e.g. adj_tab: the tab a page opens on)."""
    at = AppTest.from_file(str(ROOT / path), default_timeout=30)
    at.session_state["gauntlet_principal"] = principal(who)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def refusals(at: AppTest) -> list[str]:
    """Error boxes other than the conflict summaries of the instance view."""
    return [e.value for e in at.error if e.icon != ":material/compare_arrows:"]


def all_markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_verify_accept_with_role_correction_creates_version_and_loads_next(seeded):
    at = page_as("pages/verify_instances.py", "alice")
    iid = seeded.instances["E-noisy"]
    assert "E-noisy" in all_markdown(at) and "0 of 3 verifications done" in at.get("progress")[0].proto.text
    html = all_markdown(at)
    assert "Grid load" in html and not any(bad in html for bad in FORBIDDEN)
    at.selectbox(key=f"v_role_{iid}_E-noisy-d2").set_value("partial")
    at.button(key=f"v_accept_{iid}").click().run()
    assert not at.exception and not refusals(at)
    with Session(seeded.engine) as s:
        versions = s.exec(select(Instance).where(Instance.uid == "E-noisy").order_by(Instance.version)).all()
    assert [(v.version, v.is_latest, v.status) for v in versions] == [(1, False, "accepted"), (2, True, "accepted")]
    assert "E-gap" in all_markdown(at)  # the next instance of the queue


@pytest.mark.parametrize("button, status", [("reject", "rejected"), ("needs_edit", "needs_edit")])
def test_verify_decisions_without_edits(seeded, monkeypatch, button, status):
    monkeypatch.setenv("GAUNTLET_VERIFY_OVERLAP", "0")  # one decision settles it (no double check)
    at = page_as("pages/verify_instances.py", "carol")
    iid = seeded.instances["M-noisy"]
    at.radio(key=f"v_consistency_{iid}").set_value("inconsistent")
    at.button(key=f"v_{button}_{iid}").click().run()
    with Session(seeded.engine) as s:
        assert s.get(Instance, iid).status == status
        (ann,) = s.exec(select(Annotation)).all()
    assert ann.author == "carol" and ann.payload["consistency"] == "inconsistent" and ann.guidelines_version.startswith("1.0+")
    assert at.success[0].value == "Your verification queue is empty."


def test_label_page_hides_verdicts_and_other_labels_and_saves(seeded):
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=8, experts=["alice", "bob"])
    add_verdicts(seeded.engine, seeded, "llm:secret-judge", {(seeded.responses[("model-a", "E-noisy")], "c1"): 0})
    at = page_as("pages/label_responses.py", "bob")
    rid = next(int(b.key.split("_")[-1]) for b in at.button if b.key and b.key.startswith("l_submit_"))
    record_gold_label(seeded.engine, principal("alice"), rid, _full_label(seeded, rid, value=False, note="ALICE-NOTE"), "a")
    at.run()
    text = all_markdown(at) + "".join(str(e.value) for e in at.code)
    assert "secret-judge" not in text and "ALICE-NOTE" not in text
    assert not any(bad in all_markdown(at) for bad in FORBIDDEN)
    for r in at.radio:
        r.set_value(r.options[0])
    at.button(key=f"l_submit_{rid}").click().run()
    assert not at.exception and not refusals(at)
    with Session(seeded.engine) as s:
        mine = s.exec(select(Annotation).where(Annotation.author == "bob", Annotation.target_id == rid)).all()
    assert len(mine) == 1 and all(mine[0].payload["constraints"].values())


def _full_label(seeded, rid, value, note=""):
    from core.review.gold import load_response

    ctx = load_response(seeded.engine, rid)
    payload = {"constraints": {c.cid: value for c in ctx.bundle.constraints}, "note": note}
    if ctx.bundle.instance.mode == "gap":
        payload["valid_refusal"] = int(value)
    if ctx.bundle.instance.mode == "conflict":
        payload["conflict_recognized"] = int(value)
    return payload


def test_adjudication_page_settles_a_disagreement(seeded):
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=8, experts=["alice", "bob"])
    rid = seeded.responses[("model-a", "E-conflict")]
    record_gold_label(seeded.engine, principal("alice"), rid, _full_label(seeded, rid, True), "a")
    record_gold_label(seeded.engine, principal("bob"), rid, _full_label(seeded, rid, False), "b")
    at = page_as("pages/adjudicate.py", "admin", adj_tab="Disagreements")
    assert "1 disagreements wait for a decision." in [c.value for c in at.caption]
    at.radio(key=f"adj_{rid}_conflict").set_value("1")
    at.button(key=f"adj_submit_{rid}").click().run()
    assert not at.exception
    with Session(seeded.engine) as s:
        (adj,) = s.exec(select(Annotation).where(Annotation.kind == "adjudication")).all()
    assert adj.author == "admin" and adj.payload["conflict_recognized"] == 1
    assert "0 disagreements wait for a decision." in [c.value for c in at.caption]


def _double_verify(seeded, uid, alice, bob):
    """alice and bob decide one double-checked instance; bob's decision corrects a role and is recorded as given."""
    iid = seeded.instances[uid]
    record_verification(seeded.engine, principal("alice"), iid, consistency="inconsistent", context_valid=True,
                        decision=alice, clashing_constraints=["c2"], consistency_note="<script>x</script>clash",
                        client_token=f"a-{uid}", overlap=1.0)
    record_verification(seeded.engine, principal("bob"), iid, consistency="consistent", context_valid=False,
                        decision=bob, role_corrections={f"{uid}-d1": "partial"}, context_note="d1 is partial",
                        client_token=f"b-{uid}", overlap=1.0)
    return iid


@pytest.mark.parametrize(
    "name, choice, status, adjudications",
    [("admin rejects", "reject", "rejected", 1), ("admin accepts", "accept", "accepted", 1),
     ("nothing chosen", None, "unverified", 0)],
)
def test_adjudication_page_settles_a_verification_disagreement(seeded, name, choice, status, adjudications):
    iid = _double_verify(seeded, "E-noisy", "accept", "reject")
    at = page_as("pages/adjudicate.py", "admin", adj_tab="Verification disagreements")
    assert "1 verification disagreements wait for a decision." in [c.value for c in at.caption]
    text = all_markdown(at)
    assert "decision **accept**" in text and "decision **reject**" in text, name
    assert "clashing: `c2`" in text and "`E-noisy-d1` → partial" in text and "E-noisy" in text
    assert not any(bad in text + "".join(c.value for c in at.caption) for bad in FORBIDDEN)
    if choice:
        at.radio(key=f"vadj_decision_{iid}").set_value(choice)
    at.button(key=f"vadj_submit_{iid}").click().run()
    assert not at.exception
    assert refusals(at) == ([] if choice else ["Choose accept, reject or needs edit first."]), name
    with Session(seeded.engine) as s:
        assert s.get(Instance, iid).status == status, name
        rows = s.exec(select(Annotation).where(Annotation.kind == "adjudication")).all()
    assert len(rows) == adjudications, name
    waiting = f"{1 - adjudications} verification disagreements wait for a decision."
    assert waiting in [c.value for c in at.caption], name


@pytest.mark.parametrize("name, runs_chosen", [("with a run", True), ("no run chosen", False)])
def test_alignment_page_shows_verification_agreement(seeded, name, runs_chosen):
    _double_verify(seeded, "E-noisy", "accept", "accept")
    _double_verify(seeded, "E-gap", "accept", "reject")
    at = page_as("pages/judge_alignment.py", "ana")
    if not runs_chosen:
        at.multiselect(key="align_runs").set_value([]).run()
    assert "Benchmark verification agreement" in [h.value for h in at.subheader], name
    table = next(df.value for df in at.dataframe if "Verdict" in df.value.columns).set_index("Verdict")
    decision = table.loc["Decision (accept / reject / needs edit)"]  # alice accepted both: kappa undefined
    assert (decision["n"], decision["Agreement %"]) == (2, 50.0) and pd.isna(decision["κ"]), name
    assert decision["Note"] == "κ undefined: the first expert gave only 'accept' · small sample (n < 30)", name
    context = table.loc["Context validity"]  # alice valid, bob invalid on both
    assert (context["n"], context["Agreement %"]) == (2, 0.0) and pd.isna(context["κ"]), name
    assert "the first expert gave only 'valid' and the second expert gave only 'invalid'" in context["Note"], name
    confusion = next(df.value for df in at.dataframe if "second: reject" in df.value.columns)
    assert confusion.loc["first: accept"].tolist() == [1, 1, 0], name


def test_alignment_page_shows_table9_and_table7(seeded):
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=8, experts=["alice", "bob"])
    for (model, uid), rid in seeded.responses.items():
        for who in ("alice", "bob") if uid.startswith("E-") else ():  # the gold sample keeps to the experts' domains
            record_gold_label(seeded.engine, principal(who), rid, _full_label(seeded, rid, True), f"{who}{rid}")
        verdicts = {(rid, "c1"): 1, (rid, "c2"): int(model == "model-a")}
        add_verdicts(seeded.engine, seeded, "heuristic", verdicts)
        add_verdicts(seeded.engine, seeded, "llm:j1", {**verdicts, (rid, "c1"): int(uid != "E-gap")})
    at = page_as("pages/judge_alignment.py", "ana")
    table9 = at.dataframe[0].value.set_index(["Dimension", "Rater"])
    assert list(table9.index.get_level_values("Dimension"))[:3] == ["Per-constraint adherence"] * 3
    heuristic = table9.loc[("Per-constraint adherence", "heuristic (lexical, offline) vs gold")]
    assert (heuristic["Agreement %"], heuristic["n compared"], heuristic["n unjudged"], heuristic["n error"]) == (75.0, 12, 0, 0)
    assert pd.isna(heuristic["κ"]) and heuristic["Note"].startswith("κ undefined: gold gave only 'pass'")
    rejection = table9.loc[("Proper rejection", "llm:j1 vs gold")]  # gold asks for a refusal on 2 gap responses
    assert (rejection["n compared"], rejection["n unjudged"]) == (0, 2)
    assert table9.loc[("Per-constraint adherence", "experts (inter-annotator)"), "Agreement %"] == 100.0
    stats_table = next(df.value for df in at.dataframe if "ICC(2,k) [95% CI]" in df.value.columns).set_index("Metric")
    assert stats_table.loc["Loose IAS", "Models (n)"] == 2
    assert "ICC on fewer than 5 models: unstable" in stats_table.loc["Loose IAS", "Note"]
    assert stats_table.loc["Loose IAS", "Judges"] == "heuristic (lexical, offline), llm:j1"
    scores = next(df.value for df in at.dataframe if ("Loose IAS", "llm:j1") in df.value.columns)
    assert scores.loc["model-a", ("Loose IAS", "heuristic (lexical, offline)")] == "100.0 (n=4)"


JUDGE_CHECK_CASES = [("runs-chosen", True), ("no-run-chosen", False)]


@pytest.mark.parametrize("runs_chosen", [c[1] for c in JUDGE_CHECK_CASES], ids=[c[0] for c in JUDGE_CHECK_CASES])
def test_alignment_page_shows_judge_checks_and_fitness(seeded, tmp_path, runs_chosen):
    import asyncio

    from core.analysis.judge_check import check_judge, load_suite
    from core.scoring.judges import HeuristicJudge
    from core.services.judge_checks import save_check, store_check
    from tests.test_judge_check import synthetic_suite

    suite = synthetic_suite(tmp_path, 40)
    result = asyncio.run(check_judge(HeuristicJudge(), suite, load_suite(suite)))
    store_check(seeded.engine, result)
    row = {"figure": "prefers the answer shown first", "value": 1.0, "ci_low": 0.9, "ci_high": 1.0, "n": 32, "bias": True}
    save_check(seeded.engine, "probe:position", "llm:j1", "j1", "abc123def456", suite, 16,
               {"rows": [row], "biases": ["prefers a position"], "errors": 0})
    at = page_as("pages/judge_alignment.py", "ana")
    if not runs_chosen:
        at.multiselect(key="align_runs").set_value([]).run()
    checks = next(df.value for df in at.dataframe if "Fitness" in df.value.columns).set_index("Dimension")
    assert checks.loc["overall", "Fitness"] == "not fit" and checks.loc["overall", "n labels"] == 80
    assert checks.loc["overall", "Prompt hash"] == result.prompt_hash
    certified = next(df.value for df in at.dataframe if "Rater" in df.value.columns and "Aspect" in df.value.columns)
    overall = certified[certified["Aspect"] == "overall"].set_index("Rater")
    assert list(overall.index) == ["judge", "human vs human", "baseline: word overlap", "baseline: answer length",
                                   "baseline: majority label"]
    assert set(overall["Verdict"]) == {"not fit"} and overall.loc["judge", "κ"] == overall.loc["human vs human", "κ"]
    assert overall.loc["baseline: word overlap", "Lower bound (one-sided 95%)"] == "judge − baseline ≥ +0.00"
    published = next(df.value for df in at.dataframe if "Framework" in df.value.columns).set_index("Framework")
    assert published.loc["RAGChecker", "overall (P / S)"] == "61.93 / 60.90"
    assert published.loc["RAGAS", "Metric"] == "Answer Similarity"
    assert f"heuristic (lexical, offline) · {result.prompt_hash} (this product)" not in published.index  # other suite
    probes = next(df.value for df in at.dataframe if "Probe" in df.value.columns)
    assert probes.iloc[0][["Probe", "Bias detected", "n"]].tolist() == ["position", "yes", 32]
    statements = [m.value for m in at.markdown if "FIT" in m.value]
    assert len(statements) == 1
    assert statements[0].startswith("**heuristic (lexical, offline)**: NOT FIT (correctness not fit (κ 1.00 vs humans")


def test_alignment_page_shows_a_ragchecker_meta_check_beside_the_published_figures(seeded):
    import asyncio

    from core.analysis.judge_check import SUITES, check_judge, load_suite
    from core.scoring.judges import HeuristicJudge
    from core.services.judge_checks import store_check

    assert SUITES["ragchecker-meta"].exists(), "lay ../shared out beside the repository (ragchecker-meta)"
    result = asyncio.run(check_judge(HeuristicJudge(), "ragchecker-meta", load_suite("ragchecker-meta", 12)))
    store_check(seeded.engine, result)
    at = page_as("pages/judge_alignment.py", "ana")
    table = next(df.value for df in at.dataframe if "Framework" in df.value.columns).set_index("Framework")
    ours = table.loc[f"heuristic (lexical, offline) · {result.prompt_hash} (this product)"]
    overall = next(d for d in result.dimensions if d.dimension == "overall")
    assert ours["overall (P / S)"].startswith(f"{overall.pearson * 100:.2f} [{overall.pearson_ci[0] * 100:.1f}, ")
    assert ours["Overall agreement, κ"].startswith(f"{overall.agreement * 100:.1f}%")
    assert table.loc["ARES", "overall (P / S)"] == "17.81 / 16.26"


def test_users_page_creates_an_expert(seeded):
    at = page_as("pages/users.py", "admin")
    at.text_input(key="new_username").set_value("dora")
    at.selectbox(key="new_role").set_value("expert")
    at.multiselect(key="new_domains").set_value(["Medical"])
    at.text_input(key="new_password").set_value("dora-pass-123")
    at.button[0].click().run()
    assert not at.exception and at.success
    user = get_user(seeded.engine, "dora")
    assert user.role == "expert" and user.domains == ["Medical"] and user.password_hash.startswith("$argon2")
