"""The decision report renders in Chromium (Debian) with no request but its own document: served from 127.0.0.1, every
request is recorded and any off-host one blocked (tests/e2e/harness.py); on screen and as print media."""

from __future__ import annotations

import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.analysis import decision, decision_report, picker
from core.store.db import make_engine
from tests.analysis.decision_factories import decision_db
from tests.e2e.harness import OffHost, chromium, new_context, shot

pytestmark = pytest.mark.browser


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # noqa: D102 - keep pytest's output clean
        pass


@pytest.fixture(scope="module")
def report_url(session_url_factory, tmp_path_factory):
    engine = make_engine(decision_db(session_url_factory(), share=0.85))
    folder = tmp_path_factory.mktemp("decision")
    (folder / "decision_report.html").write_text(
        decision_report.render_html(decision.decide(engine, [1], "heuristic", picker.PickSpec())), encoding="utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/decision_report.html"
    server.shutdown()


@pytest.mark.parametrize("media", [pytest.param("screen", id="screen"), pytest.param("print", id="print")])
def test_the_report_renders_and_requests_nothing_but_itself(report_url, media) -> None:
    off_host, requested = OffHost(), []
    with chromium() as browser:
        context = new_context(browser, off_host)
        page = context.new_page()
        page.on("request", lambda request: requested.append(request.url))
        page.emulate_media(media=media)
        page.goto(report_url, wait_until="load")  # every resource the document asked for has loaded or failed
        assert page.locator("h2", has_text="Rank-sets: which candidates could be first").count() == 1
        assert page.locator("svg").count() >= 1 and page.locator("[data-v]").count() > 100
        shot(page, "decision", f"report-{media}")
        context.close()
    assert requested == [report_url] and off_host.blocked == []
