"""Browser (Debian chromium, 1440 px): the expert workspace as an annotation tool (confirmation, undo, skip,
previous, needs-edit follow-up, re-labelling, auto-satisfied conditional constraints, empty queue), admins' per-expert
progress and a gold sample kept to the experts' domains, Browse opening a ticked row with its verification history,
and a build imported as its own set where superseding needs an explicit choice."""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from sqlmodel import Session, select

from core.review.gold import draw_gold_sample, my_label
from core.review.verification import record_verification
from core.store.models import Annotation, BenchmarkSet, Constraint, Instance
from tests.e2e.harness import chromium, open_page, serve, settle, wait_until
from tests.e2e.ux_helpers import full_shot, no_exception, signed_in
from tests.workspace_factories import PASSWORDS, principal, seeded_db

pytestmark = pytest.mark.browser
FOLDER = "ux_workspace"


@pytest.fixture(scope="module")
def browser():
    with chromium() as launched:
        yield launched


@pytest.fixture
def workspace(tmp_path, request):
    """A seeded workspace (experts alice and bob on Energy, carol on Medical), prepared by the setup function given
    as the indirect parameter (if any), served on a free port."""
    seeded = seeded_db(tmp_path)
    setup = getattr(request, "param", None)
    if setup:
        setup(seeded)
    with serve(seeded.url) as served:
        yield served.url, seeded


def _signed_in(browser, url: str, who: str):
    return signed_in(browser, url, who, PASSWORDS[who])


def _current(page, seeded) -> str:
    """The uid of the instance whose decision buttons are on screen."""
    for uid, iid in seeded.instances.items():
        if page.locator(f".st-key-v_accept_{iid}").count():
            return uid
    return ""


def _showing(page, seeded, uid: str) -> None:
    """Wait for `uid`'s decision buttons, then for the run to end, and check no other instance's are on screen."""
    page.locator(f".st-key-v_accept_{seeded.instances[uid]}").wait_for()
    settle(page)
    assert _current(page, seeded) == uid


def _toast(page, text: str, timeout: int = 45_000) -> None:
    """Wait for the confirmation toast (shown 10 s) or, for a decision, the 'Last: ...' line that stays under it."""
    page.locator("[data-testid=stToast], [data-testid=stCaptionContainer]").filter(has_text=text).first.wait_for(timeout=timeout)


def _status(seeded, uid: str) -> str:
    with Session(seeded.engine) as s:
        return s.exec(select(Instance).where(Instance.uid == uid, Instance.is_latest == True)).one().status  # noqa: E712


def test_decision_confirmed_undone_skipped_and_reopened(browser, workspace):
    url, seeded = workspace
    with _signed_in(browser, url, "alice") as page:
        open_page(page, "Verify instances")
        assert _current(page, seeded) == "E-noisy"
        page.get_by_role("button", name="Reject").click()
        _toast(page, "E-noisy v1: reject recorded.")
        settle(page)
        assert _current(page, seeded) == "E-gap" and _status(seeded, "E-noisy") == "rejected"
        full_shot(page, FOLDER, "1-decision-confirmed")
        page.get_by_role("button", name="Undo").click()
        _toast(page, "Undone: E-noisy v1: reject; status now unverified.")
        settle(page)
        assert _current(page, seeded) == "E-noisy" and _status(seeded, "E-noisy") == "unverified"
        full_shot(page, FOLDER, "2-undone")
        page.get_by_role("button", name="Back to the queue").click()
        settle(page)
        page.get_by_role("button", name="Skip").click()
        settle(page)
        _showing(page, seeded, "E-gap")
        page.get_by_role("button", name="Previous").click()
        settle(page)
        _showing(page, seeded, "E-noisy")
        full_shot(page, FOLDER, "3-previous")
        with Session(seeded.engine) as s:
            assert [a.kind for a in s.exec(select(Annotation).order_by(Annotation.id)).all()] == ["verification", "retraction"]


def _needs_edit(seeded) -> None:
    record_verification(seeded.engine, principal("alice"), seeded.instances["E-gap"], consistency="consistent",
                        context_valid=False, decision="needs_edit", context_note="doc 2 answers the query",
                        client_token="alice-gap", overlap=0.0)


@pytest.mark.parametrize("workspace", [pytest.param(_needs_edit, id="needs-edit")], indirect=True)
def test_needs_edit_follow_up_then_browse_shows_the_history(browser, workspace):
    url, _ = workspace
    with _signed_in(browser, url, "bob") as page:
        open_page(page, "Verify instances")
        page.get_by_text("Needs edit (1)", exact=True).click()
        settle(page)
        page.get_by_text("Context note: doc 2 answers the query").first.wait_for()
        # the option is clicked in the filtered list, then the page waits until the box shows it: typed and entered,
        # Enter could come before the filtered list was drawn and keep the old role, and the accept then saved no new
        # version (the toast below never came; seen once in CI at load 3-5)
        role = page.get_by_label("Role of doc 2: Report 2", exact=True)
        role.click()
        role.fill("noise")
        page.get_by_role("option", name="noise", exact=True).click()  # waits for the filtered list, picks from it
        settle(page)
        wait_until(lambda: role.input_value() == "noise", "the role box to show the picked role")
        page.get_by_role("button", name="Accept").click()
        _toast(page, "E-gap v1: accept recorded; new version saved")
        settle(page)
        page.get_by_text("No instance waits for a follow-up edit.").wait_for()
        full_shot(page, FOLDER, "4-needs-edit-done")
    with _signed_in(browser, url, "vic") as viewer:
        open_page(viewer, "Browse benchmark")
        grid = viewer.locator("[data-testid=stDataFrame]").last
        grid.wait_for()
        settle(viewer)
        for _ in range(3):  # the grid is a canvas: a click before its rows are drawn selects nothing; click again
            box = grid.bounding_box()
            viewer.mouse.click(box["x"] + 18, box["y"] + 35 + 35 * 1 + 17)  # tick the second row: E-gap (uids sorted)
            settle(viewer)
            try:  # the selection reached the page (it keeps it in the URL)
                viewer.wait_for_url(lambda address: "instance=" in address, timeout=5_000)
                break
            except PlaywrightTimeout:
                continue
        viewer.get_by_text("E-gap · v2").first.wait_for()
        viewer.get_by_text("Context note: doc 2 answers the query").first.wait_for()  # v1's decision and notes
        viewer.get_by_text("decision accept").first.wait_for()  # drawn with the history, maybe after the notes
        assert "instance=E-gap" in viewer.url
        full_shot(viewer, FOLDER, "5-browse-history")


def _conditional(seeded) -> None:
    with Session(seeded.engine) as s:
        for iid in seeded.instances.values():
            s.add(Constraint(instance_id=iid, position=2, cid="c3", text="Say when the documents lack the answer.",
                             category="knowledge_protocol", sub_dimension="boundary", judge_method="llm",
                             precondition="gap"))
        s.commit()


def _answer_all(page, choice: str = "no") -> None:
    """Pick `choice` (or 0/1) in every radio group of the label form, checking each pick took."""
    settle(page)
    radios = page.locator("[data-testid=stRadio]")
    for i in range(radios.count()):
        group = radios.nth(i)
        option = group.get_by_text(choice, exact=True)
        target = option if option.count() else group.get_by_text("0" if choice == "no" else "1", exact=True)
        for _ in range(3):
            target.click()
            try:
                group.locator("input:checked").wait_for(state="attached", timeout=5_000)
                break
            except PlaywrightTimeout:
                continue
        assert group.locator("input:checked").count(), f"radio {i} did not take the click"


def _submit_label(page, choice: str = "no") -> None:
    """Submit the label form and wait for its confirmation; when the page answered "Answer every item first" (a
    radio pick that had not reached the form under load), answer again and submit once more."""
    page.get_by_role("button", name="Submit label").click()
    confirmed = page.locator("[data-testid=stToast], [data-testid=stCaptionContainer]").filter(has_text="saved.")
    refused = page.get_by_text("Answer every item first")
    confirmed.or_(refused).first.wait_for(timeout=45_000)
    if refused.count() and not confirmed.count():
        _answer_all(page, choice)
        page.get_by_role("button", name="Submit label").click()
    _toast(page, "saved.")


@pytest.mark.parametrize("workspace", [pytest.param(_conditional, id="conditional")], indirect=True)
def test_labelling_before_and_after_a_sample(browser, workspace):
    url, seeded = workspace
    with _signed_in(browser, url, "alice") as page:
        open_page(page, "Label responses")
        page.get_by_text("none has been assigned to you yet").wait_for()
        full_shot(page, FOLDER, "6-label-empty")
        draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=6, experts=["alice", "bob"])
        page.reload()
        settle(page)
        page.get_by_role("button", name="Submit label").wait_for()
        gap = page.locator("[data-testid=stRadio]").filter(has_text="Valid refusal (the response").count() > 0
        assert (page.get_by_text("satisfied automatically").count() > 0) is not gap
        _answer_all(page)
        full_shot(page, FOLDER, "7-label-form")
        _submit_label(page)
        settle(page)
        first = int(page.get_by_text("Last: label on").first.inner_text().split("(response ")[1].split(")")[0])
        page.get_by_role("button", name="Undo").click()
        _toast(page, f"Undone: label on response {first}")
        settle(page)
        assert my_label(seeded.engine, principal("alice"), first) is None
        _answer_all(page)
        _submit_label(page)
        settle(page)
        page.get_by_text("My labels", exact=True).click()
        settle(page)
        page.get_by_text("You labelled this response already").wait_for()
        _answer_all(page, "yes")
        _submit_label(page, "yes")
        wait_until(lambda: all((my_label(seeded.engine, principal("alice"), first) or {}).get("constraints", {}).values()),
                   "the re-label")
        page.get_by_text("Your labels on this response").first.click()
        full_shot(page, FOLDER, "8-relabelled-with-history")


def test_admin_sees_progress_and_a_sample_kept_to_domains(browser, workspace):
    url, _ = workspace
    with _signed_in(browser, url, "admin") as page:
        open_page(page, "Gold labels & adjudication")
        page.get_by_role("button", name="Draw sample and assign").click()
        settle(page)
        page.get_by_text("Medical (2 responses)").wait_for()
        full_shot(page, FOLDER, "9-sample-domains")
        page.get_by_role("tab", name="Expert progress").click()
        page.get_by_text("Verified: standing decisions").wait_for()
        no_exception(page)
        full_shot(page, FOLDER, "10-expert-progress")


def _build(page, seed: int) -> None:
    seed_box = page.locator(".st-key-build_seed").get_by_label("Seed", exact=True)  # each build tab has a Seed
    seed_box.fill(str(seed))
    page.get_by_label("Queries per domain (0 = all)", exact=True).fill("1")
    page.get_by_role("button", name="Build", exact=True).click()
    page.get_by_text("Built ").first.wait_for(timeout=180_000)
    settle(page)


def test_a_build_is_its_own_set_and_superseding_needs_a_choice(browser, workspace):
    url, seeded = workspace
    with _signed_in(browser, url, "admin") as page:
        page.set_default_timeout(60_000)
        open_page(page, "Build benchmark")
        page.get_by_role("tab", name="EnterpriseRAG").click()  # the page opens on "Import a file"
        page.get_by_text("Dense + BM25 (hybrid)").click()  # BM25 only: faster
        _build(page, 0)
        page.get_by_role("button", name="Import as a new set").click()
        page.get_by_text("Imported: set").wait_for()
        _build(page, 1)
        page.get_by_text("already exist with different content").filter(visible=True).first.wait_for()
        button = page.get_by_role("button", name="Import as a new set")
        assert button.is_disabled()  # no silent superseding: a choice first
        full_shot(page, FOLDER, "11-import-preview")
        page.get_by_text("import them under this set's own ids").click()
        settle(page)
        button.click()
        settle(page)
        page.get_by_text("under the set's own ids").first.wait_for()
        full_shot(page, FOLDER, "12-imported-as-own-set")
    with Session(seeded.engine) as s:
        assert len(s.exec(select(BenchmarkSet)).all()) == 2
        assert {i.version for i in s.exec(select(Instance)).all()} == {1}  # nothing superseded
