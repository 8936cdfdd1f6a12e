"""Browser (Debian chromium, 1440 px): every page opens at its own address and renders; radar labels never overprint;
percent axes, separate cost and latency axes and one colour per model hold in the drawn charts; empty states say
what to do; results narrow to a benchmark set and to accepted instances; a link reopens a filtered view; the Compare
responses page shows several models side by side with the exact prompt sent and every judge's reasons."""

from __future__ import annotations

import re

import pytest
from sqlmodel import Session, select

from bench.make_synthetic_results import make_results
from core import first_start
from core.commands.data import SAMPLE_DOMAINS, SAMPLE_FILE
from core.ingest.io import import_file
from core.review.auth import create_user
from core.store.db import make_engine
from core.store.models import BenchmarkSet, BenchmarkSetMember, Constraint, Instance, LLMCall, Response, Verdict
from tests.e2e.harness import charts_drawn, chromium, serve, settle
from tests.e2e.ux_helpers import figure_data, goto, label_boxes, no_exception, overlaps, signed_in
from ui.navigation import PAGES

pytestmark = pytest.mark.browser
USERS = {"admin": ("admin", "admin-pass-1"), "ana": ("analyst", "ana-pass-123"), "eve": ("expert", "eve-pass-123")}
ACCEPTED = 12  # instances marked accepted: fewer than 30, so the accepted-only view is flagged as a small sample


def _users(engine) -> None:
    for name, (role, password) in USERS.items():
        create_user(engine, name, role, password=password, domains=["Energy"] if role == "expert" else ())


@pytest.fixture(scope="module")
def results_db(session_url_factory) -> tuple[str, int]:
    """Four synthetic models on 90 instances (heuristic judge); a set 'half' of 45 instances; 12 accepted."""
    url = session_url_factory()
    make_results(url, n_models=4, n_instances=90, seed=2)
    engine = make_engine(url)
    _users(engine)
    with Session(engine) as s:
        instances = s.exec(select(Instance).order_by(Instance.id)).all()
        half = BenchmarkSet(name="half", origin="build")
        s.add(half)
        s.flush()
        s.add_all(BenchmarkSetMember(set_id=half.id, instance_id=i.id) for i in instances[::2])
        for number, inst in enumerate(instances):  # the synthetic set comes all accepted
            inst.status = "accepted" if number < ACCEPTED else "unverified"
            s.add(inst)
        s.commit()
        set_id = half.id
    engine.dispose()
    return url, set_id


@pytest.fixture(scope="module")
def analyst_db(session_url_factory) -> tuple[str, int, str]:
    """The bundled sample answered by the two baselines (real calls through the runner, heuristic judge), and a
    second judge's verdicts on the first response."""
    url = session_url_factory()
    engine = make_engine(url)
    assert import_file(engine, SAMPLE_FILE, domains_path=SAMPLE_DOMAINS, author="sample").ok
    first_start.ensure_first_start_run(engine)
    _users(engine)
    with Session(engine) as s:
        response = s.exec(select(Response).where(Response.status == "done").order_by(Response.id)).first()
        for c in s.exec(select(Constraint).where(Constraint.instance_id == response.instance_id)).all():
            s.add(Verdict(response_id=response.id, run_id=response.run_id, judge="llm:judge-b", metric="constraint",
                          constraint_id=c.id, passed=False, method="batched", reason=f"judge B: {c.cid} is not met"))
        s.commit()
        system = s.get(LLMCall, response.cache_key).request["messages"][0]["content"]
        rid = response.id
    engine.dispose()
    return url, rid, system


@pytest.fixture(scope="module")
def browser(results_db, analyst_db):
    """One headless chromium for the module, started after the databases are written."""
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def results(results_db, browser):
    url, set_id = results_db
    with serve(url) as served:
        yield served.url, browser, set_id


@pytest.fixture(scope="module")
def analyst_app(analyst_db, browser):
    url, rid, system = analyst_db
    with serve(url) as served:
        yield served.url, browser, rid, system


def _signed_in(browser, url: str, user: str):
    return signed_in(browser, url, user, USERS[user][1])


def test_every_page_at_1440_px(results):
    url, browser, _ = results
    with _signed_in(browser, url, "admin") as page:
        for spec in PAGES:
            # Streamlit serves the default page at the root: its own slug answers "Page not found" and falls back
            slug = "" if spec.default else spec.path.removeprefix("pages/").removesuffix(".py")
            goto(page, f"{url}/{slug}")
            charts_drawn(page)
            no_exception(page)
            assert page.get_by_role("heading", name=spec.title).count(), spec.title


def test_radar_labels_do_not_overprint(results):
    url, browser, _ = results
    with _signed_in(browser, url, "ana") as page:
        goto(page, f"{url}/domains")
        page.wait_for_selector(".js-plotly-plot .angularaxistick", timeout=30_000)
        charts_drawn(page)
        boxes = label_boxes(page, 0)
        kinds = {b["cls"].split("/")[0] for b in boxes}
        assert {"angularaxistick", "xtick", "cursor-pointer"} <= kinds, kinds  # axis labels, radial ticks, titles
        assert sum(b["text"] == "Faithfulness" for b in boxes) == 6  # one radar per domain, all labelled
        assert overlaps(boxes) == []


def test_percent_axes_separate_cost_and_latency_and_one_colour_per_model(results):
    url, browser, _ = results
    with _signed_in(browser, url, "ana") as page:
        goto(page, f"{url}/leaderboard")
        page.wait_for_selector(".js-plotly-plot .ytick", timeout=30_000)
        charts_drawn(page)
        ticks = page.locator(".js-plotly-plot").nth(0).locator(".ytick text").all_text_contents()
        assert ticks[0] == "0%" and ticks[-1] == "100%" and not any(t.startswith(("−", "-")) for t in ticks)
        cost = page.locator(".js-plotly-plot").nth(2)
        assert set(cost.locator(".g-ytitle, .g-y2title").all_text_contents()) == {"USD", "minutes"}
        assert {t["yaxis"] for t in figure_data(page, 2)} == {"y", "y2"}

        goto(page, f"{url}/domains")
        radar = {t["name"]: t["line"] for t in figure_data(page, 0) if t["type"] == "scatterpolar"}
        goto(page, f"{url}/robustness")
        page.locator("[data-testid=stButtonGroup]").get_by_text("Factual conflicts").click()  # the view control
        settle(page)
        page.wait_for_function("() => { const p = document.querySelector('.js-plotly-plot');"
                               " return p && p._fullData && p._fullData.every(t => t.type === 'scatter'); }",
                               timeout=30_000)  # the scatter has replaced the gap view's bars
        charts_drawn(page)
        scatter = {t["text"][0]: t["marker"] for t in figure_data(page, 0)}
        points = [b for b in label_boxes(page, 0) if b["cls"].startswith("textpoint")]
        assert len(points) == len(scatter) and overlaps(points) == []  # close models keep their labels apart
        shared = set(radar) & set(scatter)
        assert len(shared) >= 4 and {m: radar[m] for m in shared} == {m: scatter[m] for m in shared}
        assert len(set(radar.values())) == len(radar)  # no two models share a colour


@pytest.mark.parametrize(
    ("user", "slug", "text"),
    [
        pytest.param("ana", "judge_alignment", "No gold labels on these runs yet", id="judge-alignment-no-labels"),
        pytest.param("eve", "label_responses", "none has been assigned to you yet", id="label-responses-no-sample"),
    ],
)
def test_empty_states_say_what_to_do_next(results, user, slug, text):
    url, browser, _ = results
    with _signed_in(browser, url, user) as page:
        goto(page, f"{url}/{slug}")
        page.get_by_text(text).wait_for()
        assert page.get_by_text("Draw a sample").count()


def _bar_counts(page) -> set[int]:
    """The n behind each bar of the leaderboard's first chart (from its hover data)."""
    page.wait_for_function(  # the bars of this page, not a chart left from the page before or a first partial draw
        "() => { const p = document.querySelector('.js-plotly-plot'); return p && p._fullData && p._fullData.length"
        " && p._fullData.every(t => t.type === 'bar' && t.customdata && t.customdata.length); }", timeout=30_000)
    data = figure_data(page, 0)
    return {int(re.match(r"\d+", str(c[2])).group()) for t in data for c in t["customdata"]}


def test_results_narrow_to_a_set_and_to_accepted_instances(results):
    url, browser, set_id = results
    with _signed_in(browser, url, "ana") as page:
        goto(page, f"{url}/leaderboard")
        everything = max(_bar_counts(page))
        goto(page, f"{url}/leaderboard?set={set_id}")
        page.get_by_text("set half").first.wait_for()
        assert max(_bar_counts(page)) == 45 < everything
        goto(page, f"{url}/leaderboard?accepted=1")
        page.get_by_text("accepted instances only").first.wait_for()
        assert max(_bar_counts(page)) <= ACCEPTED
        assert "†" in {str(x) for t in figure_data(page, 0) for x in (t["text"] or [])}  # n < 30 flagged on the bars


def test_a_link_reopens_the_filtered_view(results):
    url, browser, _ = results
    with _signed_in(browser, url, "ana") as page:
        goto(page, f"{url}/leaderboard?subset=gap&judge=heuristic")
        page.get_by_text("subset gap").first.wait_for()
        box = page.get_by_label("Subset", exact=True)
        box.click()
        box.fill("conflict")
        box.press("Enter")
        settle(page)
        page.get_by_text("subset conflict").first.wait_for()
        assert "subset=conflict" in page.url and "judge=heuristic" in page.url
        shared = page.url
        other = page.context.new_page()  # the same signed-in browser, a new tab on the shared link
        goto(other, shared)
        other.get_by_text("subset conflict").first.wait_for()
        other.close()


def test_compare_responses_prompt_and_judges(analyst_app):
    url, browser, rid, system = analyst_app
    with _signed_in(browser, url, "ana") as page:
        goto(page, f"{url}/compare_responses?response={rid}")
        for model in ("baseline:always-refuse", "baseline:extractive"):
            page.get_by_text(model, exact=False).first.wait_for()
        page.get_by_text("Prompt sent").first.click()
        page.get_by_text("Exactly as sent").first.wait_for()
        page.locator("[data-testid=stCode]").filter(has_text=system[:60]).first.wait_for()  # the stored request
        page.get_by_text("3 judges: rule checker, heuristic (lexical, offline), llm:judge-b").wait_for()
        assert "instance=" in page.url and "responses=" in page.url
