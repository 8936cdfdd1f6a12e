"""Issue 43 in Debian chromium: an admin uploads a folder's PDF, DOCX, PPTX, XLSX, HTML and Markdown files (made in
the test) and the team's CSV of questions on Build benchmark > EnterpriseRAG, builds, and reads which files became
how many chunks, the languages and the duplicate left out; a corrupt PDF among the uploads is named with its reason
and nothing is built. No request leaves 127.0.0.1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.review.auth import create_user
from core.store.db import make_engine, upgrade
from tests.construction.office_fixtures import office_folder, write_queries
from tests.e2e.harness import OffHost, chromium, new_context, open_page, serve, settle, shot, sign_in

pytestmark = pytest.mark.browser
FOLDER = "build-documents"


@pytest.fixture
def world(tmp_path, monkeypatch, backend_url_factory):
    url = backend_url_factory()
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    upgrade(url)
    create_user(make_engine(url), "admin", "admin", password="admin-pass-1")
    with serve(url, GAUNTLET_LOG_DIR=str(tmp_path), GAUNTLET_BUILD_DIR=str(tmp_path / "built")) as served:
        yield served, tmp_path


def upload_and_build(page, documents: list, questions) -> None:
    """On the EnterpriseRAG tab: own files, documents and questions uploaded, BM25 only, Build."""
    open_page(page, "Build benchmark")
    page.get_by_role("tab", name="EnterpriseRAG").click()
    form = page.get_by_test_id("stForm").filter(has_text="Documents")
    form.get_by_text("Upload my own files").click()
    uploaders = form.get_by_test_id("stFileUploader")
    uploaders.filter(has_text="Documents").locator("input[type=file]").set_input_files([str(p) for p in documents])
    uploaders.filter(has_text="Questions").locator("input[type=file]").set_input_files(str(questions))
    for path in [*documents, questions]:  # uploads in a form run no script: wait until each chip says it is done
        form.get_by_role("button", name=f"Remove {Path(path).name}", exact=True).first.wait_for(timeout=60_000)
    settle(page)
    form.get_by_text("Dense + BM25 (hybrid)").click()  # BM25 only: faster
    form.get_by_role("button", name="Build", exact=True).click()
    settle(page, timeout=120_000)


@pytest.mark.parametrize("corrupt", [False, True], ids=["folder-builds", "corrupt-pdf-refused"])
def test_office_documents_become_a_benchmark(world, corrupt):
    served, folder = world
    docs = office_folder(folder / "docs")
    if corrupt:
        (docs / "broken.pdf").write_bytes(b"%PDF-1.4\ngarbage")
    off_host = OffHost()
    with chromium() as browser:
        page = new_context(browser, off_host).new_page()
        try:
            sign_in(page, served.url, "admin", "admin-pass-1")
            upload_and_build(page, sorted(docs.iterdir()), write_queries(folder / "questions.csv", "csv"))
            if corrupt:
                page.get_by_text(re.compile(r"Build failed: nothing imported; unreadable: broken\.pdf: ")).wait_for()
                assert not page.get_by_text(re.compile(r"^Built \d+ instances")).count()
                assert not list((folder / "built").glob("*.jsonl"))
            else:
                page.get_by_text(re.compile(r"^Built \d+ instances")).wait_for(timeout=120_000)
                page.get_by_text("8 files, 13 chunks; languages: en 11, fr 1, und 1").wait_for()
                page.get_by_text("1 duplicate chunks left out: support-001 repeats support-copy-001").wait_for()
                page.get_by_text("Questions: 6 real").wait_for()
            shot(page, FOLDER, "corrupt" if corrupt else "built")
        finally:
            shot(page, FOLDER, f"last-{corrupt}")
    assert off_host.blocked == []
