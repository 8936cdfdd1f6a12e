"""Issue 14 end to end in Debian chromium, without a shell and without a reload: an admin registers a model that
points at the loopback fake server (and one whose endpoint variable is unset: the page names it), checks it with a
preflight call, launches a named run, watches that run (not an older one), opens the Leaderboard while the job is
still working (the fake server holds the run's calls until the Leaderboard has said so: a condition, not a race with
the job) and sees the new model appear when it is scored; the run reads "done"; the server leaves no zombie process;
no request leaves 127.0.0.1. A failing run leaves a screenshot in test-artifacts/run_to_result/."""

from __future__ import annotations

import subprocess
import threading

import pytest
from sqlmodel import Session, select

from core.commands.data import init_db
from core.generation.models_admin import PREFLIGHT_PROMPT
from core.review.auth import create_user
from core.store.db import make_engine
from core.store.models import Response, Run, Verdict
from core.testing.fake_server import FakeLLMServer
from tests.e2e.harness import (
    OffHost,
    chromium,
    new_context,
    open_page,
    pick,
    serve,
    settle,
    shot_on_failure,
    sign_in,
    wait_until,
)

pytestmark = pytest.mark.browser
FOLDER = "run_to_result"
LIMIT = 6


HOLD_S = 100  # at most this long a held call waits (under the client's 120 s timeout); released once the test has seen it


def hold_run_calls(fake: FakeLLMServer) -> threading.Event:
    """Make `fake` answer preflight checks at once and hold every other call (the run's) until the returned event is
    set: the test decides when the job may go on, instead of racing a latency."""
    release, decide = threading.Event(), fake.behaviour.decide_all

    def held(prompt: str, seed: int | None = None):
        if PREFLIGHT_PROMPT not in prompt:
            release.wait(HOLD_S)
        return decide(prompt, seed)

    fake.behaviour.decide_all = held
    return release


@pytest.fixture
def world(tmp_path, monkeypatch, backend_url_factory):
    url = backend_url_factory()
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    init_db()
    engine = make_engine(url)
    create_user(engine, "admin", "admin", password="admin-pass-1")
    fake = FakeLLMServer().start()
    release = hold_run_calls(fake)
    env = {"FAKE_GEN_URL": f"{fake.base_url}/v1", "FAKE_GEN_KEY": "fake-key-12345", "GAUNTLET_LOG_DIR": str(tmp_path)}
    try:
        with serve(url, **env) as served:
            yield served, engine, fake, release
    finally:
        release.set()
        fake.stop()


def _zombies(pid: int) -> list[str]:
    out = subprocess.run(["ps", "--ppid", str(pid), "-o", "pid=,stat=,args="], capture_output=True, text=True, check=False).stdout
    return [line for line in out.splitlines() if line.split()[1].startswith("Z")]


def _register(page, name: str, url_variable: str, key_variable: str) -> None:
    form = page.get_by_test_id("stForm").filter(has_text="Save model")
    form.get_by_role("textbox", name="Name", exact=True).fill(name)
    form.get_by_role("textbox", name="Endpoint URL variable").fill(url_variable)
    form.get_by_role("textbox", name="API key variable").fill(key_variable)
    form.get_by_role("button", name="Save model").click()
    settle(page)
    page.get_by_text(f"Saved model {name}.").first.wait_for()


def test_register_preflight_launch_watch_and_see_it_on_the_leaderboard(world):
    served, engine, fake, release = world
    off_host = OffHost()
    with chromium() as browser:
        page = new_context(browser, off_host).new_page()
        with shot_on_failure(page, FOLDER):
            sign_in(page, served.url, "admin", "admin-pass-1")
            page.evaluate("window.__sameDocument = true")  # gone if the page is ever reloaded
            open_page(page, "Run evaluation")
            _register(page, "fake-gpt", "FAKE_GEN_URL", "FAKE_GEN_KEY")
            _register(page, "offline-llm", "NOT_SET_URL", "")
            page.get_by_text("offline-llm cannot be called: NOT_SET_URL (endpoint URL) not set").first.wait_for()
            settle(page)  # the registering run has ended: the form is drawn once, not beside its stale copy

            page.get_by_role("textbox", name="Run name").fill("e2e run")
            page.get_by_role("textbox", name="Run name").press("Enter")
            settle(page)
            pick(page, "Models", "offline-llm")
            page.get_by_text("offline-llm cannot be called: NOT_SET_URL (endpoint URL) not set").last.wait_for()
            assert page.get_by_role("button", name="Launch run").is_disabled()
            pick(page, "Models", "fake-gpt")
            chips = page.get_by_test_id("stMultiSelect").filter(has=page.get_by_label("Models", exact=True))
            assert chips.locator("[data-tag]").all_inner_texts() == ["offline-llm", "fake-gpt"]  # both picks kept
            page.get_by_role("button", name="Remove offline-llm").click()
            settle(page)
            page.get_by_role("spinbutton", name="Instance limit (0 = all)").fill(str(LIMIT))
            page.get_by_role("spinbutton", name="Instance limit (0 = all)").press("Enter")
            page.get_by_role("spinbutton", name="Concurrency per provider").fill("1")
            page.get_by_role("spinbutton", name="Concurrency per provider").press("Enter")
            settle(page)
            page.get_by_role("button", name="Check models").click()
            settle(page)
            page.get_by_text("fake-gpt: answered in").wait_for()
            calls_after_preflight = fake.call_count
            assert calls_after_preflight == 1

            page.get_by_role("button", name="Launch run").click()
            settle(page)
            page.get_by_text("launched in the background").first.wait_for()
            with Session(engine) as session:
                run = session.exec(select(Run)).one()
            assert (run.name, run.config["models"], run.config["limit"]) == ("e2e run", ["fake-gpt"], LIMIT)
            page.get_by_text(f"Run {run.id}:").first.wait_for()  # the run just launched is the one watched

            open_page(page, "Leaderboard")
            page.get_by_text("No scored run yet").wait_for()  # opened while the job is still working (held)
            release.set()
            page.get_by_text("#1 e2e run").first.wait_for(state="attached", timeout=120_000)
            page.get_by_text("fake-gpt").first.wait_for(state="attached", timeout=30_000)
            settle(page)

            open_page(page, "Run evaluation")
            page.get_by_text(f"Run {run.id}: done").first.wait_for(timeout=60_000)
            page.get_by_text(f"Scoring with heuristic (lexical, offline): {LIMIT}/{LIMIT} responses (finished)").wait_for()
            assert page.evaluate("window.__sameDocument === true"), "the page was reloaded"
    with Session(engine) as session:
        statuses = session.exec(select(Response.status).where(Response.run_id == run.id)).all()
        scored = session.exec(select(Verdict.response_id).where(Verdict.run_id == run.id,
                                                                Verdict.judge == "heuristic").distinct()).all()
    assert statuses == ["done"] * LIMIT and len(scored) == LIMIT
    assert fake.call_count == calls_after_preflight + 1 + LIMIT  # launching checks the model once more
    wait_until(lambda: not _zombies(served.process.pid), "the finished job to be reaped", timeout=10)
    assert off_host.blocked == []
