"""Issue 28 end to end in Debian chromium, without a shell: for each protocol an admin imports a small slice (Build
benchmark > Import a file, a server path) or builds one (the protocol's build tab), imports it as a named set,
chooses that protocol on Run evaluation (the scope line names its instances and items), launches the offline
extractive baseline, waits for the run to be scored and reads the protocol's report table on its page. No request
leaves 127.0.0.1. Screenshots at 1440 px in test-artifacts/protocols/."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlmodel import Session, func, select

from core.review.auth import create_user
from core.store.db import make_engine, upgrade
from core.store.models import Instance, Response, Run
from tests.e2e.harness import OffHost, choose, chromium, new_context, open_page, pick, serve, settle, shot, sign_in

pytestmark = pytest.mark.browser
FOLDER = "protocols"
ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "datasets"


@dataclass(frozen=True)
class Walk:
    """How a protocol's slice gets in (an import of `fmt`, or its build tab), and the page that reports it."""

    source: str  # a file of the shared datasets (its first `lines` lines), or a folder for a build
    lines: int
    fmt: str = ""  # import format; empty: built on `tab`
    tab: str = ""
    source_label: str = ""
    layout: str = ""
    limit: int = 0
    report_page: str = ""


WALKS = {
    "lit_ragbench": Walk("lit-ragbench/en.jsonl", 3, fmt="lit-ragbench", report_page="RAG abilities"),
    "enterprise_rag": Walk("tests/fixtures/mini.jsonl (the repository's)", 0, fmt="jsonl", report_page="Leaderboard"),
    "kb_corruption": Walk("mmlu/ragstress_eval700_stratified_seed42.jsonl", 0, tab="RAG-Stress (KB corruption)",
                          source_label="MMLU questions", limit=2, report_page="Stress tests"),
    "misleading_evidence": Walk("medqa-usmle-4opt/medqa_us_4opt_test_first500.jsonl", 0, tab="Misleading evidence",
                                source_label="Source file", layout="medqa", limit=3, report_page="Misleading evidence"),
    "domainrag": Walk("domainrag", 0, tab="DomainRAG", source_label="DomainRAG release folder", limit=1,
                      report_page="Domain abilities"),
}


def source_path(walk: Walk, folder: Path) -> Path:
    """The slice the walk reads: the head of a shared file copied under `folder`, or the shared file or folder."""
    path = ROOT / "tests" / "fixtures" / "mini.jsonl" if walk.fmt == "jsonl" else SHARED / walk.source
    if not walk.lines:
        return path
    out = folder / path.name
    with path.open(encoding="utf-8") as handle:
        out.write_text("".join(next(handle) for _ in range(walk.lines)), encoding="utf-8")
    return out


@pytest.fixture
def world(tmp_path, monkeypatch, backend_url_factory):
    url = backend_url_factory()
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    upgrade(url)
    engine = make_engine(url)
    create_user(engine, "admin", "admin", password="admin-pass-1")
    env = {"GAUNTLET_LOG_DIR": str(tmp_path), "GAUNTLET_BUILD_DIR": str(tmp_path / "built"),
           "GAUNTLET_IMPORT_ROOTS": f"{tmp_path}:{SHARED}:{ROOT / 'tests' / 'fixtures'}"}
    with serve(url, **env) as served:
        yield served, engine, tmp_path


def bring_in(page, walk: Walk, path: Path) -> None:
    """Import the slice (or build it on its tab) and import the result as a named set."""
    open_page(page, "Build benchmark")
    if walk.fmt:
        choose(page, "Format", walk.fmt)
        settle(page)
        if walk.fmt == "lit-ragbench":
            choose(page, "Import as", "lit_ragbench")
            settle(page)
        box = page.get_by_role("textbox", name="or a path on the server")
        box.fill(str(path))
        box.press("Enter")
        settle(page)
        page.get_by_text(re.compile(r"records read: \d+ valid, 0 rejected")).wait_for()
        page.get_by_role("button", name="Import as a new set").click()
    else:
        page.get_by_role("tab", name=walk.tab).click()
        form = page.get_by_test_id("stForm").filter(has_text=walk.source_label)
        form.get_by_role("textbox", name=re.compile(re.escape(walk.source_label))).fill(str(path))
        if walk.layout:
            form.get_by_label("Source layout", exact=True).click()
            page.get_by_role("option", name=walk.layout, exact=True).click()
        form.get_by_role("spinbutton", name="Items (0 = all)").fill(str(walk.limit))
        form.get_by_role("button", name="Build").click()
        settle(page, timeout=120_000)
        page.get_by_text(re.compile(r"Built \d+ \w+ instances")).wait_for(timeout=120_000)
        page.get_by_role("tabpanel").filter(has_text="Import as a new set").get_by_role(
            "button", name="Import as a new set").click()
    settle(page)
    page.get_by_text(re.compile("Imported")).first.wait_for(timeout=60_000)


def launch_on(page, protocol: str) -> str:
    """Choose the protocol and the extractive baseline on Run evaluation and launch; the scope line shown."""
    open_page(page, "Run evaluation")
    page.get_by_role("button", name="Register the baselines (always-refuse, extractive)").click()
    settle(page)
    pick(page, "Protocols", re.compile(f"^{protocol} \\("))
    page.get_by_text(re.compile(f"^{protocol} \\(")).first.wait_for()
    pick(page, "Models", "baseline:extractive")
    page.get_by_text(re.compile(r"^Scope: ")).wait_for()
    scope = page.get_by_text(re.compile(r"^Scope: ")).inner_text()
    page.get_by_role("button", name="Launch run").click()
    settle(page)
    page.get_by_text("launched in the background").first.wait_for()
    page.get_by_text(re.compile(r"Run \d+: done")).first.wait_for(timeout=120_000)
    page.get_by_text(re.compile(r"Scoring with heuristic .*\(finished\)")).first.wait_for(timeout=120_000)
    return scope


@pytest.mark.parametrize("protocol", list(WALKS), ids=list(WALKS))
def test_each_protocol_from_import_to_its_report_table(world, protocol):
    served, engine, folder = world
    walk = WALKS[protocol]
    off_host = OffHost()
    with chromium() as browser:
        page = new_context(browser, off_host).new_page()
        try:
            sign_in(page, served.url, "admin", "admin-pass-1")
            bring_in(page, walk, source_path(walk, folder))
            shot(page, FOLDER, f"{protocol}-1-imported")
            scope = launch_on(page, protocol)
            shot(page, FOLDER, f"{protocol}-2-run-done")
            open_page(page, walk.report_page)
            page.locator("[data-testid=stDataFrame]:visible").first.wait_for(timeout=60_000)  # not one in a closed expander
            assert not page.get_by_text(re.compile(r"^No .*responses (yet|in these runs)")).count()
            shot(page, FOLDER, f"{protocol}-3-report")
        finally:
            shot(page, FOLDER, f"{protocol}-last")
    with Session(engine) as session:
        run = session.exec(select(Run)).one()
        items = session.exec(select(func.count()).select_from(Response).where(Response.run_id == run.id)).one()
        protocols = set(session.exec(select(Instance.protocol).join(Response, Response.instance_id == Instance.id)
                                     .where(Response.run_id == run.id)).all())
    assert protocols == {protocol} and f"= {items} items" in scope, scope
    assert off_host.blocked == []
