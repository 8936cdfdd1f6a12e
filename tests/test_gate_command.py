"""`gauntlet gate` on runs scored through the read model, against the fake server: pass, regression, flaky items
apart, and each reason for "could not decide" (incomplete, unscored, several models, unknown metric, bad rules)."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from core.analysis import gate
from core.cli import app
from core.generation import runs
from core.store.db import get_engine
from core.testing.fake_server import FakeLLMServer, load_script
from core.testing.gate_demo import write_benchmark, write_script
from core.testing.pytest_plugin import Gauntlet

N = 40
RULES = {"alpha": 0.05, "min_shared": 30, "metrics": ["exact_match", {"metric": "token_f1", "max_drop": 0.02}]}
# candidate name -> (items answered wrongly, items right on their first call only, repeats)
CANDIDATES = {"same": (0, 0, 1), "bad": (15, 0, 1), "flaky": (0, 20, 2), "bad-and-flaky": (15, 20, 2)}


def _model(name: str, server: FakeLLMServer) -> list[str]:
    return [name, "--provider", "openai_compatible", "--model-name", f"scripted-{name}", "--price-in", "0",
            "--price-out", "0", "--setting", f"base_url={server.base_url}/v1"]


@pytest.fixture(scope="module")
def gated(session_url_factory, tmp_path_factory) -> tuple[str, dict[str, int], object]:
    """A database with a baseline run and one run per scripted candidate, each scored by the heuristic judge."""
    url, tmp = session_url_factory(), tmp_path_factory.mktemp("gate")
    bench = write_benchmark(tmp / "bench.jsonl", N)
    servers = {"base": FakeLLMServer(load_script(write_script(tmp / "base.yaml", N))).start()}
    servers |= {name: FakeLLMServer(load_script(write_script(tmp / f"{name}.yaml", N, wrong, flaky))).start()
                for name, (wrong, flaky, _) in CANDIDATES.items()}
    run_ids: dict[str, int] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GAUNTLET_DATABASE_URL", url)
        patch.setenv("GAUNTLET_SECRETS_FILE", str(tmp / "none.toml"))
        g = Gauntlet(tmp, patch)
        g.cli("import", str(bench))
        try:
            for name, server in servers.items():
                g.cli("models", "add", *_model(name, server))
                run_ids[name] = g.run(name, ["Parts", "Service"], "heuristic", CANDIDATES.get(name, (0, 0, 1))[2])
        finally:
            for server in servers.values():
                server.stop()
        engine = get_engine(url)
        run_ids["pending"] = runs.create_run(engine, runs.RunOptions(models=["same"], domains=["Parts", "Service"]))
        run_ids["unscored"] = _executed_unscored(engine, run_ids, g, servers)
        run_ids["two-models"] = g.run("base,same", ["Parts", "Service"], "heuristic", 1)  # all from the cache
    return url, run_ids, tmp


def _executed_unscored(engine, run_ids, g, servers) -> int:
    """A finished run no judge scored: the baseline model answered again from the cache."""
    import asyncio

    from core.generation.runner import execute_run

    run_id = runs.create_run(engine, runs.RunOptions(models=["base"], domains=["Parts", "Service"]))
    asyncio.run(execute_run(engine, run_id))
    return run_id


def _gate(url: str, tmp, monkeypatch, baseline: int, candidate: int, rules: dict = RULES,
          *extra: str) -> tuple[int, dict, str]:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    (tmp / "rules.yaml").write_text(yaml.safe_dump(rules))
    md, js = tmp / "gate.md", tmp / "gate.json"
    for path in (md, js):
        path.unlink(missing_ok=True)
    result = CliRunner().invoke(app, ["gate", str(baseline), str(candidate), "--rules", str(tmp / "rules.yaml"),
                                      "--markdown", str(md), "--json", str(js), *extra])
    doc = json.loads(js.read_text()) if js.exists() else {}
    return result.exit_code, doc, md.read_text() if md.exists() else result.output


VERDICT_CASES = [
    ("same-answers-pass", "same", 0, 0, 0),
    ("fifteen-wrong-is-a-regression", "bad", 2, 0, -15 / N),
    ("flaky-items-alone-never-fail", "flaky", 0, 20, -10 / N),
    ("regression-beside-flaky-items", "bad-and-flaky", 2, 20, -25 / N),
]


@pytest.mark.parametrize(("candidate", "code", "n_flaky", "diff"), [c[1:] for c in VERDICT_CASES],
                         ids=[c[0] for c in VERDICT_CASES])
def test_gate_verdicts(gated, tmp_path, monkeypatch, candidate, code, n_flaky, diff):
    url, run_ids, _ = gated
    exit_code, doc, summary = _gate(url, tmp_path, monkeypatch, run_ids["base"], run_ids[candidate])
    assert exit_code == code, summary
    overall = {r["metric"]: r for r in doc["rows"] if r["dimension"] == "overall"}
    assert overall["exact_match"]["n_shared"] == N and overall["exact_match"]["n_flaky"] == n_flaky
    assert overall["exact_match"]["diff"] == pytest.approx(diff)
    assert len([f for f in doc["flaky"] if f["metric"] == "exact_match"]) == n_flaky
    assert all(f["baseline_rate"] == 1.0 and f["candidate_rate"] == 0.5 for f in doc["flaky"])
    assert {r["segment"] for r in doc["rows"] if r["dimension"] == "domain"} == {"Parts", "Service"}
    assert not any(r["gated"] for r in doc["rows"] if r["dimension"] != "overall")
    assert gate.HEADLINES[code] in summary


def test_gate_reads_the_same_values_as_the_report(gated, monkeypatch):
    """One number, one computation: the gate's baseline mean is the report's mean of the same metric."""
    url, run_ids, _ = gated
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    report = json.loads(CliRunner().invoke(app, ["report", str(run_ids["bad"]), "--format", "json"]).output)
    cell = next(r for r in report["reference_metrics"] if r["metric"] == "exact_match")
    frame, _ = gate.run_values(get_engine(url), run_ids["bad"], "heuristic")
    assert frame["exact_match"].mean() == pytest.approx(cell["value"], abs=1e-12) == 25 / N


REPEATED_CASES = [  # candidate, mean exact match over items, flaky items (20 right on their first repeat only)
    ("flaky-items-count-once", "flaky", 30 / N, 20),
    ("regression-beside-flaky-items", "bad-and-flaky", 15 / N, 20),
]


@pytest.mark.parametrize(("candidate", "mean", "n_flaky"), [c[1:] for c in REPEATED_CASES],
                         ids=[c[0] for c in REPEATED_CASES])
def test_a_repeated_run_counts_each_item_once_in_the_report_and_the_gate(gated, tmp_path, monkeypatch, candidate,
                                                                        mean, n_flaky):
    """Two repeats per item: the report's cell is the mean of per-item pass rates with n = items (not responses), its
    interval inside [0, 1], the repeats and flaky items stated; the gate's candidate mean is that cell."""
    url, run_ids, _ = gated
    _, doc, _ = _gate(url, tmp_path, monkeypatch, run_ids["base"], run_ids[candidate])
    report = json.loads(CliRunner().invoke(app, ["report", str(run_ids[candidate]), "--format", "json"]).output)
    cell = next(r for r in report["reference_metrics"] if r["metric"] == "exact_match")
    gated_row = next(r for r in doc["rows"] if r["metric"] == "exact_match" and r["dimension"] == "overall")
    assert gated_row["candidate"] == pytest.approx(cell["value"], abs=1e-12) and cell["value"] == pytest.approx(mean)
    assert cell["n"] == N and 0 <= cell["ci_low"] <= cell["value"] <= cell["ci_high"] <= 1
    assert report["repeats"] == [{"model": candidate, "repeats": 2, "items": N, "flaky_items": n_flaky}]
    table = CliRunner().invoke(app, ["report", str(run_ids[candidate])]).output
    assert f"{candidate}: 2 repeats per item, {N} items, {n_flaky} flaky" in table


UNDECIDED_CASES = [
    ("candidate-incomplete", "base", "pending", RULES, (), f"is incomplete: {N} item(s) pending"),
    ("candidate-unscored", "base", "unscored", RULES, (), "no single judge scored both runs"),
    ("several-models", "base", "two-models", RULES, (), "holds several models (base, same): name one"),
    ("unknown-model", "base", "same", RULES, ("--candidate-model", "nobody"), "model 'nobody' is not in run"),
    ("unknown-judge", "base", "same", RULES, ("--judge", "llm:nobody"), "judge 'llm:nobody' did not score both runs"),
    ("unknown-metric", "base", "same", {**RULES, "metrics": ["no_such_metric"]}, (), "no_such_metric: no value"),
    ("too-few-shared", "base", "same", {**RULES, "min_shared": 41}, (), "40 shared item(s); the rules need at least 41"),
    ("bad-rules", "base", "same", {**RULES, "alpha": 2}, (), "alpha must be in (0, 1)"),
]


@pytest.mark.parametrize(("baseline", "candidate", "rules", "extra", "reason"), [c[1:] for c in UNDECIDED_CASES],
                         ids=[c[0] for c in UNDECIDED_CASES])
def test_gate_could_not_decide_says_why(gated, tmp_path, monkeypatch, capsys, baseline, candidate, rules, extra, reason):
    url, run_ids, _ = gated
    exit_code, doc, summary = _gate(url, tmp_path, monkeypatch, run_ids[baseline], run_ids[candidate], rules, *extra)
    assert exit_code == gate.UNDECIDED
    assert reason in (summary + " ".join(doc.get("reasons", [])))


def test_naming_the_model_of_a_run_with_several_models_decides(gated, tmp_path, monkeypatch):
    url, run_ids, _ = gated
    code, doc, summary = _gate(url, tmp_path, monkeypatch, run_ids["base"], run_ids["two-models"], RULES,
                               "--candidate-model", "same")
    assert code == gate.PASS, summary
    assert doc["reasons"] == [] and doc["rows"][0]["n_shared"] == N


FITNESS_CASES = [
    ("judge-below-the-minimum-kappa", 0.99, ["judge 'llm:j1' not fit: mean kappa against gold 0.50 < 0.99"]),
    ("judge-fit", 0.4, ["rejection: 1 shared item(s); the rules need at least 2"]),
]


@pytest.mark.parametrize(("kappa", "reasons"), [c[1:] for c in FITNESS_CASES], ids=[c[0] for c in FITNESS_CASES])
def test_gold_labels_check_the_judge_and_correct_the_difference(tmp_path, kappa, reasons):
    """Two models of one run with gold labels (tests/test_alignment.build): the judge's mean kappa against gold is
    0.50; when it is fit, the PPI++ corrected difference of Strict IAS is shown beside the judge's."""
    from tests.test_alignment import build

    s, _ = build(tmp_path)
    rules = gate.parse_rules({"min_shared": 2, "min_judge_kappa": kappa, "metrics": ["strict_ias", "rejection"]})
    result = gate.run_gate(s.engine, s.run_id, s.run_id, rules, "llm:j1", "model-a", "model-b")
    assert result.code == gate.UNDECIDED and result.reasons == reasons
    corrected = {c["metric"]: c for c in result.corrected}
    if kappa < 0.5:
        assert corrected["strict_ias"]["judge_diff"] == -0.5 and corrected["strict_ias"]["n"] == 2
        assert corrected["rejection"]["estimate"] is None and "needs gold labels" in corrected["rejection"]["note"]
        assert "Judge-corrected differences" in gate.markdown_summary(result)
    else:
        assert corrected == {} and result.rows == []


CORRECTED_CASES = [
    ("shown-beside-the-raw-test", "show", gate.PASS, []),
    ("gated-with-too-few-gold-labels", "gate", gate.UNDECIDED,
     ["strict_ias: judge-corrected difference needs at least 10 gold-labelled pairs, 2 found"]),
]


@pytest.mark.parametrize(("corrected", "code", "reasons"), [c[1:] for c in CORRECTED_CASES],
                         ids=[c[0] for c in CORRECTED_CASES])
def test_corrected_rule_on_stored_gold_labels(tmp_path, corrected, code, reasons):
    """tests/test_alignment.build holds 2 gold-labelled pairs of Strict IAS: shown by default, too few to gate on."""
    from tests.test_alignment import build

    s, _ = build(tmp_path)
    rules = gate.parse_rules({"min_shared": 2, "corrected": corrected, "metrics": ["strict_ias"]})
    result = gate.run_gate(s.engine, s.run_id, s.run_id, rules, "llm:j1", "model-a", "model-b")
    assert result.code == code and result.reasons == reasons
    assert [c["n"] for c in result.corrected] == [2]
