"""The decision report: every number equals the read model's to 1e-12, it fetches nothing, and it depends only on its
inputs (the CLI and the page button give the same file: tests/pages/test_decision_button.py; Chromium:
tests/e2e/test_decision_report_browser.py)."""

from __future__ import annotations

import math
import re

import pytest
from typer.testing import CliRunner

from core.analysis import alignment, decision, decision_family, decision_report, picker, readmodel, stats
from core.analysis.readmodel import decision_scores as keys
from core.metrics import STATES
from core.store.db import make_engine
from core.store.labels import gold_draws, gold_labels, gold_probabilities
from tests.analysis.decision_factories import decision_db

# One xdist worker runs this module: its expensive module-scoped fixtures are built once, not once per worker
pytestmark = pytest.mark.xdist_group("decision-report")

SPEC = picker.PickSpec(floors={"rejection": 0.2, "strict_ias": 0.05})


@pytest.fixture(scope="module")
def db(session_url_factory):
    url = decision_db(session_url_factory(), share=0.85)
    return url, make_engine(url)


@pytest.fixture(scope="module")
def document(db) -> str:
    """The report of run 1 under SPEC, rendered once for the tests that only read it (rendering reads, never writes)."""
    return decision_report.render_html(decision.decide(db[1], [1], "heuristic", SPEC))


@pytest.fixture(scope="module")
def laid_out(document):
    """The report laid out in PDF pages once (decision_report.layout_pdf, what render_pdf writes), for the PDF tests."""
    return decision_report.layout_pdf(document)


@pytest.fixture(scope="module")
def asked_document(db) -> str:
    """The same report with the question asked, rendered once for the section tests."""
    return decision_report.render_html(decision.decide(db[1], [1], "heuristic", SPEC, "Which model for support?"))


def evidence_numbers(every, metrics, judge: str) -> dict[str, float]:
    """Each decision metric's value, interval, n and state counts per model, straight from the read model's per-item
    values of its protocol (stats.interval of its declaration; states counted here)."""
    out: dict[str, float] = {}
    for key in metrics:
        entry = keys.decision_key(key)
        mine = every[every["protocol"] == entry.protocol]
        for model in sorted(every["model"].unique()):
            group = mine[mine["model"] == model]
            ci = stats.interval(group[key].to_numpy(float) if key in group and len(group) else [math.nan], entry.declaration)
            name = f"evidence|{key}|{model}"
            out |= {f"{name}|value": ci.mean, f"{name}|ci_low": ci.ci_low, f"{name}|ci_high": ci.ci_high,
                    f"{name}|n": ci.n}
            states = keys.key_states(group, key) if key in group else None
            for state in STATES:
                count = 0 if states is None else int((states == state).sum())
                if count:
                    out[f"{name}|n_{state}"] = count
    return out


def family_numbers(f: decision_family.Family) -> dict[str, float]:
    """The per-protocol rank-sets and segment cells of decision_family.family on the read model's per-item values."""
    out: dict[str, float] = {}
    if f.rank_sets.empty:
        return out
    out["family|tests"] = f.tests
    for r in f.rank_sets.to_dict("records"):
        out |= {f"family|{r['key']}|{r['model']}|{c}": r[c] for c in ("estimate", "ci_low", "ci_high", "n", "rank_low",
                                                                       "rank_high")}
    for r in f.segments.to_dict("records"):
        key = f"family_segment|{r['protocol']}|{r['domain']}|{r['condition']}|{r['language']}|{r['key']}"
        out |= {f"{key}|{c}": r[c] for c in ("shared", "diff", "p_value", "p_holm")}
    return out


def expected_numbers(engine, spec: picker.PickSpec, run_ids=(1,), judge: str = "heuristic") -> dict[str, float]:
    """The read model's numbers under the report's keys, computed here from the read model and the picker directly."""
    run_ids = list(run_ids)
    every = keys.decision_scores(engine, run_ids, judge)
    scores = every[every["protocol"] == keys.DEFAULT_PROTOCOL]
    result = picker.rank(every, readmodel.model_catalog(engine), spec, judge=judge)
    gold = gold_labels(engine, run_ids)
    out: dict[str, float] = {}
    for r in result.ranking.to_dict("records"):
        for c in ("score", "cost_per_1k", "judge_cost_per_1k", "total_cost_per_1k", "latency_ms_mean", "responses",
                  *result.metrics, *(f"n_{m}" for m in result.metrics)):
            out[f"ranking|{r['model']}|{c}"] = r[c]
    out |= evidence_numbers(every, result.metrics, judge)
    candidates = result.ranking.loc[~result.ranking["baseline"], "model"].tolist()
    top = (result.top_two.a, result.top_two.b) if result.top_two else None
    scoped_all = readmodel.filter_scores(readmodel.latest_per_model_instance(every), spec.modes, spec.domains)
    out |= family_numbers(decision_family.family(scoped_all, result.evidence, candidates, result.metrics, top))
    for name, t in (("floor", result.floor), ("top_two", result.top_two)):
        if t:
            out |= {f"test|{name}|{c}": getattr(t, c) for c in ("diff", "ci_low", "ci_high", "shared")}
    for w in result.weaknesses:
        out |= {f"weakness|{w.metric}|{w.test.b}|{c}": getattr(w.test, c) for c in ("diff", "ci_low", "ci_high", "shared")}
    for f in result.near_floors:
        out |= {f"near_floor|{f.metric}|value": f.value, f"near_floor|{f.metric}|floor": f.floor,
                f"near_floor|{f.metric}|margin": f.margin}
    for f in result.safety_flags:
        out |= {f"safety|{f.metric}|value": f.value, f"safety|{f.metric}|n": f.n}
    out |= {f"weight|{m}": w for m, w in spec.weights.items() if w > 0} | {f"floor|{m}": v for m, v in spec.floors.items()}
    for r in readmodel.load_corrected(engine, run_ids, judge).to_dict("records"):
        for c in ("judge_value", "judge_n", "estimate", "ci_low", "ci_high", "N", "n", "effective_n"):
            out[f"corrected|{r['model']}|{r['metric']}|{c}"] = r[c]
    for r in readmodel.model_counts(scores).to_dict("records"):
        out |= {f"counts|{r['model']}|{c}": v for c, v in r.items() if c != "model"}
    out |= _gold_numbers(engine, run_ids, scores, gold, candidates, spec, top)
    for a in alignment.judge_vs_gold(engine, run_ids, judge, gold):
        key = f"judge|{judge}|{a.dimension}"
        out |= {f"{key}|n_compared": a.n_compared, f"{key}|n_unjudged": a.n_unjudged, f"{key}|n_error": a.n_error,
                f"{key}|kappa": a.kappa, f"{key}|kappa_low": a.ci_low, f"{key}|kappa_high": a.ci_high,
                f"{key}|agreement": a.agreement}
    out |= {f"dataset|{r['benchmark_set']}|instances": r["instances"]
            for r in decision.datasets(engine, run_ids)[0].to_dict("records")}
    out |= {f"run|{r}|id": r for r in run_ids}
    return {k: math.nan if v is None else float(v) for k, v in out.items()}


def _gold_numbers(engine, run_ids, scores, gold, candidates, spec, top) -> dict[str, float]:
    """The judge-corrected rank-sets and segment differences from the gold labels (none without gold labels)."""
    out: dict[str, float] = {}
    if not gold:
        return out
    scoped = readmodel.latest_per_model_instance(scores)
    frame = readmodel.gold_values(gold, gold_draws(engine, run_ids))
    sets = picker.rank_sets(scoped, frame, candidates, picker.gold_metrics(spec), gold_probabilities(engine, run_ids))
    for r in sets.to_dict("records"):
        out |= {f"rankset|{r['metric']}|{r['model']}|{c}": r[c] for c in ("estimate", "ci_low", "ci_high", "n",
                                                                           "rank_low", "rank_high")}
        out[f"rankset|{r['metric']}|confidence"] = r["confidence"]
    if top is None:
        return out
    segments = picker.segment_differences(scoped, frame, decision.datasets(engine, run_ids)[1], *top,
                                          picker.gold_metrics(spec))
    for r in segments.to_dict("records"):
        key = f"segment|{r['domain']}|{r['condition']}|{r['language']}|{r['metric']}"
        out |= {f"{key}|{c}": r[c] for c in ("shared", "n", "judge_diff", "estimate", "ci_low", "ci_high", "p_value",
                                              "p_holm")}
    return out


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12


def test_every_number_in_the_report_equals_the_read_model(db, document) -> None:
    _, engine = db
    shown, expected = decision_report.numbers(document), expected_numbers(engine, SPEC)
    assert set(shown) == set(expected), (sorted(set(shown) - set(expected))[:5], sorted(set(expected) - set(shown))[:5])
    wrong = {k: (shown[k], expected[k]) for k in expected if not _same(shown[k], expected[k])}
    assert not wrong, list(wrong.items())[:5]
    tested = [k for k in shown if k.endswith("|p_holm") and not math.isnan(shown[k])]
    assert tested and any(k.startswith("rankset|") for k in shown)  # segments were tested, rank-sets shown


@pytest.mark.parametrize("needle", [
    pytest.param("<script", id="no-script"), pytest.param("http://", id="no-http-reference"),
    pytest.param("https://", id="no-https-reference"), pytest.param("src=", id="no-source-attribute"),
    pytest.param("@import", id="no-css-import"), pytest.param("url(", id="no-css-url"),
])
def test_the_report_references_nothing_outside_itself(document, needle) -> None:
    assert needle not in document.lower()


@pytest.mark.parametrize("section", [
    "Summary", "The question and the candidates", "Recommendation", "Ranking, cost and latency", "The data",
    "Judges and their agreement with gold", "Raw and judge-corrected estimates",
    "Rank-sets: which candidates could be first", "Segment differences between the top two",
    "Runs, prompts and product version",
])
def test_the_report_has_every_section(asked_document, section) -> None:
    assert f"<h2>{section}</h2>" in asked_document and "Which model for support?" in asked_document
    assert re.search(r"content hash|Content hash", asked_document) and "<svg" in asked_document


def test_the_cli_writes_the_same_file_as_the_library_and_states_the_data_time(db, document, tmp_path,
                                                                             monkeypatch) -> None:
    """The CLI's file is byte for byte the report rendered in-process for the same inputs (a second, independent
    computation: the `document` fixture), so the file depends on its inputs only."""
    from core.cli import app

    url, engine = db
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    out = tmp_path / "a.html"
    result = CliRunner().invoke(app, ["decide", "1", "--out", str(out), "--floor", "rejection=0.2",
                                      "--floor", "strict_ias=0.05"])
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == document.encode("utf-8")
    assert f"Data as of {decision.as_of(engine, [1])}" in document


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--weight", "speed=1"], "unknown decision metric", id="unknown-metric"),
    pytest.param(["--floor", "rejection=high"], "needs a number", id="bad-number"),
    pytest.param(["--weight", "kb_corruption:delta=1"], "kb_corruption:corruption_delta", id="close-match-named"),
])
def test_the_cli_rejects_bad_weights_and_floors(db, tmp_path, monkeypatch, args, message) -> None:
    from core.cli import app

    url, _ = db
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    result = CliRunner().invoke(app, ["decide", "1", "--out", str(tmp_path / "x.html"), *args])
    assert result.exit_code == 2 and message in result.output


def test_the_report_renders_as_pdf_without_a_browser(laid_out) -> None:
    pdf = bytes(laid_out.write_pdf())  # decision_report.render_pdf's bytes, from the module's one layout
    assert pdf.startswith(b"%PDF-") and len(pdf) > 10_000


@pytest.mark.parametrize("reference", [
    pytest.param("<img src='http://example.com/logo.png'>", id="image"),
    pytest.param("<link rel='stylesheet' href='https://example.com/a.css'>", id="stylesheet"),
])
def test_the_pdf_renderer_fetches_nothing(reference) -> None:
    from weasyprint.urls import FatalURLFetchingError

    with pytest.raises(FatalURLFetchingError, match="must fetch nothing"):
        decision_report.render_pdf(f"<!doctype html><html><head>{reference}</head><body>x</body></html>")


def test_each_estimate_has_one_value_in_every_table(document) -> None:
    """The rank-set table prints the same corrected estimate as the corrected-estimates table (only its interval
    is wider); the counts header is spelled out; segment cells that were not tested say so."""
    shown = decision_report.numbers(document)
    pairs = [(k, f"corrected|{k.split('|')[2]}|{k.split('|')[1]}|estimate") for k in shown
             if k.startswith("rankset|") and k.endswith("|estimate")]
    assert pairs and all(_same(shown[a], shown[b]) for a, b in pairs), pairs[:3]
    assert "rejectioerror" not in document and "rejection error" in document
    untested = [k for k in shown if k.startswith("segment|") and k.endswith("|p_value") and math.isnan(shown[k])]
    gold_section = document.split("<h2>Segment differences between the top two</h2>", 1)[1].split("<h2>", 1)[0]
    assert gold_section.count("not tested</span>") == len(untested)


def _table_overflows(laid_out) -> list[tuple[int, float, float]]:
    """(page, table width, page content width) of every table wider than its page, from WeasyPrint's layout."""
    out = []
    for number, page in enumerate(laid_out.pages, 1):
        box = page._page_box
        stack, limit = list(box.all_children()), box.width
        while stack:
            child = stack.pop()
            if type(child).__name__ == "TableBox" and child.margin_width() > limit + 0.5:
                out.append((number, child.margin_width(), limit))
            stack.extend(child.all_children() if hasattr(child, "all_children") else [])
    return out


def _page_texts(laid_out) -> list[str]:
    """The text of every laid-out PDF page (its margin boxes included), from WeasyPrint's layout."""
    texts = []
    for page in laid_out.pages:
        stack, parts = [page._page_box], []
        while stack:
            child = stack.pop()
            parts.append(getattr(child, "text", "") or "")
            stack.extend(child.all_children() if hasattr(child, "all_children") else [])
        texts.append(" ".join(parts))
    return texts


def test_no_table_is_wider_than_its_pdf_page_and_every_page_names_the_runs(laid_out) -> None:
    assert _table_overflows(laid_out) == []
    pages = _page_texts(laid_out)
    assert len(pages) >= 2 and all("Decision report" in t and "#1" in t for t in pages), [t[:80] for t in pages]
