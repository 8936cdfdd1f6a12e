"""gauntlet judge check: the RAGChecker meta-evaluation computation, the suite format, the fitness statement, storage.

The computation is checked against the source: amazon-science/RAGChecker `data/meta_evaluation/meta_eval.py` (read at
commit 657d54ba07ace0fe545ed0e9905032b5b73c5278; the data at 6091f08c00e676e87a970f2aeb4a23a484746348, copied to
../shared/datasets/ragchecker-meta). Running that script's formula on RAGChecker's own outputs gives the paper's Table 2 rows for RAGChecker and the
annotators (core.analysis.published); this module's implementation must reproduce them to the printed digit.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from core.analysis.fitness import judge_fitness
from core.analysis.judge_check import (
    DIMENSIONS,
    SUITES,
    check_judge,
    comparison_rows,
    correlations,
    framework_deltas,
    human_sanity,
    latest_checks,
    load_suite,
    normalised,
)
from core.analysis.judge_probes import estimate_check_cost
from core.analysis.published import RAGCHECKER_TABLE_2, published_row
from core.generation.llm import make_client
from core.generation.providers.base import ModelConfig
from core.scoring.judges import HeuristicJudge, LLMJudge
from core.services.judge_checks import store_check
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.providers.conftest import point_sdks_at

META = SUITES["ragchecker-meta"]


@pytest.fixture
def needs_meta_data() -> None:
    """The RAGChecker suite must be laid out beside the repository (../shared): a missing suite fails, never skips."""
    assert META.exists(), f"{META} is missing: lay ../shared out beside the repository"


needs_meta = pytest.mark.usefixtures("needs_meta_data")


@needs_meta
@pytest.mark.parametrize("dimension", DIMENSIONS, ids=DIMENSIONS)
def test_reproduces_ragcheckers_published_correlations(dimension) -> None:
    pairs = load_suite("ragchecker-meta")
    rows = json.loads((META.parent / "baseline_ragchecker.json").read_text(encoding="utf-8"))
    pearson, spearman = correlations(normalised(framework_deltas(rows, "ragchecker", dimension)),
                                     [p.labels[dimension] for p in pairs])
    expected = published_row("RAGChecker").of(dimension)
    assert (round(pearson * 100, 2), round(spearman * 100, 2)) == expected


@needs_meta
@pytest.mark.parametrize("dimension", DIMENSIONS, ids=DIMENSIONS)
def test_reproduces_the_annotators_sanity_check(dimension) -> None:
    human = human_sanity(load_suite("ragchecker-meta"))[dimension]
    expected = published_row("Human").of(dimension)
    assert (round(human["pearson"] * 100, 2), round(human["spearman"] * 100, 2)) == expected
    assert human["n"] == 280


MEASURED = {d: {"pearson": 0.3681, "pearson_ci": [0.278, 0.456], "spearman": 0.3801, "spearman_ci": [0.287, 0.465],
                "agreement": 0.482, "kappa": 0.228, "kappa_ci": [0.16, 0.29], "n_agreement": 500} for d in DIMENSIONS}
COMPARISON_CASES = [
    ("ragchecker-meta-published-then-judge", "ragchecker-meta", [("heuristic", MEASURED)], 10,
     {"Framework": "heuristic (this product)", "overall (P / S)": "36.81 [27.8, 45.6] / 38.01 [28.7, 46.5]",
      "Overall agreement, κ": "48.2%, κ 0.23 [0.16, 0.29] (n 500)"}),
    ("ragchecker-meta-published-only", "ragchecker-meta", [], 9,
     {"Framework": "Human", "overall (P / S)": "70.09 / 68.89", "Overall agreement, κ": "not published"}),
    ("own-suite-has-nothing-published", "my-gold.jsonl", [("heuristic", MEASURED)], 0, None),
]


@pytest.mark.parametrize(("suite", "measured", "n_rows", "last"), [c[1:] for c in COMPARISON_CASES],
                         ids=[c[0] for c in COMPARISON_CASES])
def test_judge_beside_the_published_figures(suite, measured, n_rows, last) -> None:
    rows = comparison_rows(suite, measured)
    assert len(rows) == n_rows
    if last:
        assert {k: rows[-1][k] for k in last} == last


TABLE_2_CASES = [  # cells read off the paper's Table 2 (arXiv 2408.08067), one per framework and dimension checked
    ("ragas-completeness-spearman", "RAGAS", "completeness", 1, 61.35),
    ("ares-overall-pearson", "ARES", "overall", 0, 17.81),
    ("trulens-correctness-spearman", "TruLens", "correctness", 1, 27.37),
    ("crud-rag-overall-spearman", "CRUD-RAG", "overall", 1, 39.71),
    ("bleu-completeness-spearman", "BLEU", "completeness", 1, 21.85),
]


@pytest.mark.parametrize(("framework", "dimension", "which", "value"), [c[1:] for c in TABLE_2_CASES],
                         ids=[c[0] for c in TABLE_2_CASES])
def test_published_table_cells(framework, dimension, which, value) -> None:
    assert published_row(framework).of(dimension)[which] == value
    assert len(RAGCHECKER_TABLE_2) == 9


FITNESS_CASES = [
    ("high-kappa-decides", 0.75, 100, (), "fit to decide"),
    ("moderate-kappa-explores", 0.55, 100, (), "fit to explore"),
    ("low-kappa-not-fit", 0.39, 100, (), "not fit"),
    ("exactly-0.4-explores", 0.40, 100, (), "fit to explore"),
    ("exactly-0.7-decides", 0.70, 100, (), "fit to decide"),
    ("bias-caps-at-explore", 0.85, 100, ("prefers a position",), "fit to explore"),
    ("too-few-labels", 0.9, 10, (), "undetermined"),
    ("no-kappa", None, 100, (), "undetermined"),
]


@pytest.mark.parametrize(("kappa", "n", "biases", "label"), [c[1:] for c in FITNESS_CASES],
                         ids=[c[0] for c in FITNESS_CASES])
def test_fitness_thresholds(kappa, n, biases, label) -> None:
    assert judge_fitness(kappa, n, biases).label == label


def _row(i: int, first: str, second: str, label: int, language: str = "en") -> dict:
    return {"instance_id": i, "query": f"What is fact {i}?", "gt_answer": f"The plant output is {i}0 MW in March.",
            "model1": {"response": first}, "model2": {"response": second}, "correctness_label": label,
            "completeness_label": label, "overall_label": label, "language": language}


SUITE_CASES = [
    ("two-annotators-merge", [_row(1, "a", "b", 1), _row(1, "a", "b", 2)], 1, (1.0, 2.0)),
    ("distinct-pairs-stay-apart", [_row(1, "a", "b", 1), _row(2, "a", "b", -1)], 2, (1.0,)),
]


@pytest.mark.parametrize(("rows", "n_pairs", "first_labels"), [c[1:] for c in SUITE_CASES],
                         ids=[c[0] for c in SUITE_CASES])
def test_suite_file_format(tmp_path, rows, n_pairs, first_labels) -> None:
    path = tmp_path / "suite.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    pairs = load_suite(str(path))
    assert len(pairs) == n_pairs and pairs[0].labels["overall"] == first_labels


@pytest.mark.parametrize("bad", [3, "yes", None], ids=["out-of-range", "text", "missing"])
def test_suite_rejects_bad_labels(tmp_path, bad) -> None:
    row = _row(1, "a", "b", 1) | {"overall_label": bad}
    path = tmp_path / "suite.json"
    path.write_text(json.dumps([row]), encoding="utf-8")
    with pytest.raises(ValueError, match="overall_label"):
        load_suite(str(path))


GOOD = "The plant output is {i}0 MW in March."
BAD = "Nobody knows anything about it."


def synthetic_suite(tmp_path, n: int = 12):
    """Pairs where the human prefers the answer that repeats the reference (sides alternate)."""
    rows = []
    for i in range(1, n + 1):
        good, bad = GOOD.format(i=i), BAD
        first, second, label = (good, bad, -2) if i % 2 else (bad, good, 2)
        rows += [_row(i, first, second, label), _row(i, first, second, label)]
    path = tmp_path / "suite.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def test_heuristic_check_on_a_suite_it_can_read(tmp_path) -> None:
    suite = synthetic_suite(tmp_path, 40)
    result = asyncio.run(check_judge(HeuristicJudge(), suite, load_suite(suite)))
    overall = next(d for d in result.dimensions if d.dimension == "overall")
    assert overall.pearson > 0.9 and overall.kappa == pytest.approx(1.0) and overall.n_agreement == 80
    assert overall.n_labels == 80 and overall.kappa_ci == (1.0, 1.0)
    certificate = next(c for c in result.certificates if c.aspect == "overall")
    assert certificate.judge.kappa == certificate.human.kappa == pytest.approx(1.0)
    # as good as the humans, but the word-overlap shortcut is as good too: nothing shows skill
    assert certificate.gap_low >= -certificate.margin and certificate.beats["word overlap"] <= 0
    assert result.fitness.label == "not fit" and result.judge_model == "heuristic"


LLM_RULES = [
    ScriptRule(match=r"task: response-claims[\s\S]*Answer:\n[^\n]*MW", reply='{"claims": ["good claim"]}'),
    ScriptRule(match=r"task: response-claims", reply='{"claims": ["bad claim"]}'),
    ScriptRule(match=r"task: claim-verify[\s\S]*good claim",
               reply='{"results": [{"index": 1, "supported": true, "reason": "stated"}]}'),
    ScriptRule(match=r"task: claim-verify", reply='{"results": [{"index": 1, "supported": false, "reason": "no"}]}'),
    ScriptRule(match=r"task: context-claims", reply='{"core": ["The output is high."], "supplementary": []}'),
    ScriptRule(match=r"task: coverage-verify[\s\S]*Answer to evaluate:\n[^\n]*MW",
               reply='{"results": [{"id": "K1", "covered": true, "reason": "yes"}]}'),
    ScriptRule(match=r"task: coverage-verify", reply='{"results": [{"id": "K1", "covered": false, "reason": "no"}]}'),
]


def llm_judge(engine) -> LLMJudge:
    config = ModelConfig(name="judge-test", provider="openai", model_name="judge-test", price_input_per_mtok=1.0,
                         price_output_per_mtok=2.0, settings={"timeout_s": 2})
    return LLMJudge(make_client(config, engine), "llm:judge-test")


def test_llm_judge_check_through_the_fake_server(engine, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    suite = synthetic_suite(tmp_path, 6)
    with FakeLLMServer(LLM_RULES) as fake:
        point_sdks_at(monkeypatch, fake)
        judge = llm_judge(engine)
        result = asyncio.run(check_judge(judge, suite, load_suite(suite)))
    by_dim = {d.dimension: d for d in result.dimensions}
    assert all(by_dim[d].kappa == pytest.approx(1.0) for d in DIMENSIONS)
    assert result.judge_model == "judge-test" and len(result.prompt_hash) == 12
    assert result.calls == 6 * 7  # per pair: reference claims once, then claims, verify and coverage per answer
    estimate = estimate_check_cost(judge, load_suite(suite))
    assert estimate.calls == result.calls and estimate.cost_usd > 0


def test_checks_are_stored_with_the_judge_version(engine, tmp_path) -> None:
    suite = synthetic_suite(tmp_path, 4)
    result = asyncio.run(check_judge(HeuristicJudge(), suite, load_suite(suite)))
    store_check(engine, result)
    store_check(engine, result)
    rows = latest_checks(engine, "suite")
    assert [(r.judge, r.judge_model, r.prompt_hash, r.n) for r in rows] == [("heuristic", "heuristic", result.prompt_hash, 4)]
    assert rows[0].figures["dimensions"]["overall"]["n_labels"] == 8 and rows[0].fitness == result.fitness.label


CLI_CASES = [
    ("check-prints-figures-fitness-and-stores", ["judge", "check", "heuristic", "--suite", "{suite}"],
     ["overall", "verdict, overall: UNDETERMINED", "human vs human", "baseline: word overlap",
      "fitness: UNDETERMINED (correctness undetermined (κ 1.00 vs humans 1.00, margin 0.15, best baseline ", "stored as judge check"],
     1),
    ("check-no-store", ["judge", "check", "heuristic", "--suite", "{suite}", "--no-store"],
     ["judge check: estimated 0 judge calls", "fitness: UNDETERMINED"], 0),
    ("check-estimate-only", ["judge", "check", "heuristic", "--suite", "{suite}", "--estimate-only"],
     ["judge check: estimated 0 judge calls"], 0),
    ("probe-estimates-before-it-runs", ["judge", "probe", "position", "heuristic", "--suite", "{suite}"],
     ["probe position: estimated 0 judge calls", "prefers the answer shown first", "detected: no bias"], 1),
    ("probe-estimate-only", ["judge", "probe", "length", "heuristic", "--suite", "{suite}", "--estimate-only"],
     ["probe length: estimated 0 judge calls"], 0),
]


@pytest.mark.parametrize(("args", "expected", "stored"), [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_judge_cli_runs_offline(engine, tmp_path, args, expected, stored) -> None:
    from sqlmodel import Session, select
    from typer.testing import CliRunner

    from core.cli import app
    from core.store.models import JudgeCheck

    suite = synthetic_suite(tmp_path, 16)
    result = CliRunner().invoke(app, [a.format(suite=suite) for a in args])
    assert result.exit_code == 0, result.output
    for text in expected:
        assert text in result.output
    with Session(engine) as session:
        assert len(session.exec(select(JudgeCheck)).all()) == stored


@needs_meta
def test_judge_check_cli_prints_the_published_figures_beside_the_judge(engine) -> None:
    from typer.testing import CliRunner

    from core.cli import app

    result = CliRunner().invoke(app, ["judge", "check", "heuristic", "--suite", "ragchecker-meta", "--limit", "12",
                                      "--no-store"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("beside the published figures (Ru et al. 2024") and "Table 2" in line for line in lines)
    ragas = next(line for line in lines if line.startswith("RAGAS "))
    assert "Answer Similarity" in ragas and "41.07 / 43.21" in ragas and "48.31 / 57.23" in ragas
    ours = next(line for line in lines if line.startswith("heuristic (this product)"))
    assert ours.count("[") >= 6  # a 95% CI beside each Pearson and Spearman


FITNESS_OF_CASES = [
    ("never-checked", False, [], "undetermined"),
    ("checked-no-probe", True, [], "fit to decide"),
    ("checked-and-biased", True, ["prefers the answer shown first"], "fit to explore"),
]


@pytest.mark.parametrize(("checked", "biases", "label"), [c[1:] for c in FITNESS_OF_CASES],
                         ids=[c[0] for c in FITNESS_OF_CASES])
def test_fitness_of_a_stored_judge(engine, tmp_path, checked, biases, label) -> None:
    from core.analysis.judge_check import fitness_of
    from core.services.judge_checks import save_check
    from tests.fitness_cases import certificate

    suite = synthetic_suite(tmp_path, 16)
    result = asyncio.run(check_judge(HeuristicJudge(), suite, load_suite(suite)))
    if checked:  # a certificate whose verdict is fit to decide (judge κ 0.82 against humans at 0.75)
        save_check(engine, "suite", "heuristic", result.judge_model, result.prompt_hash, suite, 16,
                   {**result.figures(), "certification": [certificate(0.82, 500)]})
    save_check(engine, "probe:position", "heuristic", result.judge_model, result.prompt_hash, suite, 16,
               {"rows": [], "biases": biases, "errors": 0})
    save_check(engine, "probe:length", "heuristic", "other-version", "000000000000", suite, 16,
               {"rows": [], "biases": ["prefers the longer answer"], "errors": 0})  # another version: ignored
    assert fitness_of(engine, "heuristic").label == label
