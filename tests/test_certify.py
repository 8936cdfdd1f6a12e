"""The rule relative to the suite's humans (core.analysis.certify): simulation against known truth, the parts it rests
on, and the mtRAG suite read from the authors' published file."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from core.analysis import certify as cert
from core.analysis import stats

CUTS = (-1.2, -0.4, 0.4, 1.2)
HUMAN_SD, BASELINE_SD = 0.5, 2.0


def simulated_suite(seed: int, judge_sd: float, scale: str, n: int = 280) -> cert.Certificate:
    """A suite with a latent truth per item, two annotators (truth + noise, cut into their scale), a judge (truth +
    noise, continuous) and two baselines: a weak signal (like word overlap) and pure noise (like length)."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=n)
    raw = [np.digitize(truth + rng.normal(0, HUMAN_SD, n), CUTS) - 2.0 for _ in range(2)]
    if scale == "ties":  # ragchecker-meta: model1 / tie / model2, unweighted
        annot, categories, scheme = [np.sign(r) for r in raw], (-1.0, 0.0, 1.0), "none"
    else:  # mtRAG: 1-4 ratings, linear weights
        annot, categories, scheme = [np.clip(r + 2, 1, 4) for r in raw], (1.0, 2.0, 3.0, 4.0), "linear"
    labels = [tuple(float(a[i]) for a in annot) for i in range(n)]
    judge = truth + rng.normal(0, judge_sd, n)
    baselines = {"word overlap": truth + rng.normal(0, BASELINE_SD, n), "answer length": rng.normal(size=n)}
    return cert.certify("sim", list(judge), labels, baselines, categories, scheme, resamples=400, seed=seed)


SIMULATIONS = [  # (case id, judge noise, scale, runs, check on the share of runs rated fit to decide)
    ("second-human-level-judge-with-ties", HUMAN_SD, "ties", 50, lambda share: share >= 0.9),
    ("second-human-level-judge-1-4-scale", HUMAN_SD, "scale", 50, lambda share: share >= 0.9),
    ("baseline-level-judge-with-ties", BASELINE_SD, "ties", 25, lambda share: share == 0),
    ("baseline-level-judge-1-4-scale", BASELINE_SD, "scale", 25, lambda share: share == 0),
]


@pytest.mark.parametrize(("judge_sd", "scale", "runs", "check"), [c[1:] for c in SIMULATIONS],
                         ids=[c[0] for c in SIMULATIONS])
def test_simulated_judges_are_rated_by_the_rule(judge_sd, scale, runs, check) -> None:
    verdicts = [simulated_suite(1000 + seed, judge_sd, scale).verdict for seed in range(runs)]
    share = verdicts.count(cert.DECIDE) / runs
    assert check(share), (share, verdicts)


VERDICTS = [  # (case id, judge - humans lower bound, judge - baseline lower bounds, items, verdict)
    ("non-inferior-and-beats-all", -0.05, {"a": 0.02, "b": 0.1}, 280, cert.DECIDE),
    ("at-the-margin", -0.15, {"a": 0.02}, 280, cert.DECIDE),
    ("beats-baselines-only", -0.3, {"a": 0.02, "b": 0.1}, 280, cert.EXPLORE),
    ("human-level-but-a-baseline-as-good", 0.0, {"a": -0.01, "b": 0.1}, 280, cert.NOT_FIT),
    ("too-few-items", 0.0, {"a": 0.2}, 29, cert.UNDETERMINED),
]


@pytest.mark.parametrize(("gap", "beats", "n", "expected"), [c[1:] for c in VERDICTS], ids=[c[0] for c in VERDICTS])
def test_verdict_rule(gap, beats, n, expected) -> None:
    assert cert.verdict(gap, beats, cert.MARGIN, n) == expected


SCALES = [  # (case id, scores, pooled annotator labels, categories, expected labels)
    ("ties-at-annotators-rate", [-3, -1, 0, 0.5, 2, 5], [-1, 0, 0, 1, 1, 1], (-1, 0, 1), [-1, 0, 0, 1, 1, 1]),
    ("equal-scores-one-label", [1, 1, 1, 1], [1, 2, 3, 4], (1, 2, 3, 4), [1, 1, 1, 1]),
    ("skewed-1-4", [0.1, 0.9, 1.0, 1.0], [4, 4, 4, 1], (1, 2, 3, 4), [1, 4, 4, 4]),
]


@pytest.mark.parametrize(("scores", "pooled", "categories", "expected"), [c[1:] for c in SCALES],
                         ids=[c[0] for c in SCALES])
def test_scores_on_the_annotators_scale(scores, pooled, categories, expected) -> None:
    assert cert.to_scale(scores, pooled, categories).tolist() == expected


def test_unweighted_kappa_matches_cohen() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 3, 200).astype(float), rng.integers(0, 3, 200).astype(float)
    table = cert.item_tables(list(a), [(x,) for x in b], (0.0, 1.0, 2.0)).sum(axis=0)
    assert float(cert.kappa_of(table, np.eye(3))) == pytest.approx(stats.cohen_kappa(a, b).kappa)


BASELINE_CASES = [  # (case id, answer, passages, overlap, length)
    ("all-found", "The law library", "visit the law library today", 1.0, 3.0),
    ("half-found", "library closed forever now", "the library", 0.25, 4.0),
    ("empty", "", "anything", 0.0, 0.0),
    ("cjk-per-character", "東京都", "東京", 2 / 3, 3.0),
]


@pytest.mark.parametrize(("answer", "passages", "overlap", "length"), [c[1:] for c in BASELINE_CASES],
                         ids=[c[0] for c in BASELINE_CASES])
def test_baselines(answer, passages, overlap, length) -> None:
    assert cert.word_overlap(answer, passages) == pytest.approx(overlap)
    assert cert.answer_length(answer) == length


# --------------------------------------------------------------------------- mtRAG, read from the published file

mtrag = pytest.importorskip("core.analysis.mtrag_suite")
needs_mtrag = pytest.mark.skipif(not mtrag.PATH.exists(), reason="mtRAG human evaluations not in ../shared")


@needs_mtrag
def test_mtrag_suite_as_published() -> None:
    items = mtrag.load()
    assert len(items) == 477 and {i.model for i in items} == {"reference", "llama-3.1-405b-instruct", "gpt-4o"}
    labelled = {a: sum(len(i.labels[a]) >= 2 for i in items) for a in mtrag.ASPECTS}
    assert labelled == {"faithfulness": 477, "completeness": 477, "appropriateness": 477}
    assert all(set(ls) <= set(mtrag.SCALE) for i in items for ls in i.labels.values())
    later = next(i for i in items if i.conversation.count("\nuser: ") >= 2)
    view = mtrag.judge_input(later)
    assert view.query.startswith("user: ") and "\nagent: " in view.query  # earlier turns, as annotators saw them
    assert view.documents and all(d.text for d in view.documents)


@needs_mtrag
def test_judge_check_prints_rows_and_verdicts_on_mtrag(db_url) -> None:
    from core.cli import app

    result = CliRunner().invoke(app, ["judge", "check", "heuristic", "--suite", "mtrag", "--limit", "60",
                                      "--no-store"])
    assert result.exit_code == 0, result.output
    out = result.output
    for aspect in mtrag.ASPECTS:
        assert f"verdict, {aspect}: " in out
    for row in ("judge", "human vs human", "baseline: word overlap", "baseline: answer length",
                "baseline: majority label"):
        assert sum(line.startswith(f"  {row:<26} ") for line in out.splitlines()) == 3, row
    assert "margin 0.15" in out and "fitness: " in out


@needs_mtrag
def test_llm_judge_certified_on_mtrag_through_the_fake_server(engine, tmp_path, monkeypatch) -> None:
    """A scripted LLM judge over the real openai SDK and the loopback server: scored on mtRAG with the passages,
    certified per aspect, stored, and read back as its fitness. It calls every claim supported and covered, so its
    labels are constant: κ 0 like the majority label, which it cannot beat, so it is not fit."""
    import asyncio
    import json

    from core.analysis.judge_check import check_mtrag, fitness_of
    from core.commands.judge import format_check
    from core.services.judge_checks import store_check
    from core.testing.fake_server import FakeLLMServer, ScriptRule
    from tests.providers.conftest import point_sdks_at
    from tests.test_judge_check import llm_judge

    rules = [
        ScriptRule(match=r"task: response-claims", reply='{"claims": ["a claim"]}'),
        ScriptRule(match=r"task: claim-verify", reply='{"results": [{"index": 1, "supported": true, "reason": "ok"}]}'),
        ScriptRule(match=r"task: context-claims", reply='{"core": ["A passage fact."], "supplementary": []}'),
        ScriptRule(match=r"task: coverage-verify", reply='{"results": [{"id": "K1", "covered": true, "reason": "ok"}]}'),
    ]
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    with FakeLLMServer(rules) as fake:
        point_sdks_at(monkeypatch, fake)
        result = asyncio.run(check_mtrag(llm_judge(engine), limit=40))
        seen = "\n".join(json.dumps(r) for r in fake.requests)
    assert result.judge_model == "judge-test" and result.calls == 40 * 4
    assert {c.aspect for c in result.certificates} == set(mtrag.ASPECTS)
    for c in result.certificates:
        assert c.judge.kappa == pytest.approx(0.0) and c.verdict == cert.NOT_FIT
        assert [b.rater for b in c.baselines] == list(cert.BASELINES)
    assert "\\nagent: " in seen and "\\nuser: " in seen  # the earlier turns reached the judge, as annotators saw them
    store_check(engine, result)
    assert fitness_of(engine, "llm:judge-test").label == cert.NOT_FIT
    assert "verdict, faithfulness: NOT FIT" in format_check(result)


def test_an_undefined_kappa_is_stored_as_null() -> None:
    """Every annotator and the judge give one label: kappa is undefined; the stored certificate holds null, not NaN."""
    import json

    labels = [(4.0, 4.0)] * 40
    c = cert.certify("faithfulness", [1.0] * 40, labels, {"word overlap": [0.5] * 40}, (1.0, 2.0, 3.0, 4.0), "linear",
                     resamples=50)
    stored = c.as_dict()
    assert stored["judge"]["kappa"] is None and stored["human"]["kappa"] is None
    json.dumps(stored, allow_nan=False)
    assert "undefined" in cert.summary([stored])[1] and c.verdict == cert.NOT_FIT


TO_SCALE_CASES = [
    # (name, scores, labels, categories, expected)
    ("binary-verdicts-kept-when-labels-lean-one-way", [0, 1, 1, 0, 1], [0, 0, 0, 1, 1, 0], (0.0, 1.0), [0, 1, 1, 0, 1]),
    ("continuous-scores-ranked", [0.2, 0.9, 0.5, 0.1], [0, 0, 1, 1], (0.0, 1.0), [0, 1, 1, 0]),
    ("ones-on-a-four-point-scale-ranked", [1.0, 1.0], [4.0, 4.0], (1.0, 2.0, 3.0, 4.0), [4.0, 4.0]),
]


@pytest.mark.parametrize(("scores", "labels", "categories", "expected"), [c[1:] for c in TO_SCALE_CASES],
                         ids=[c[0] for c in TO_SCALE_CASES])
def test_to_scale(scores, labels, categories, expected) -> None:
    """A 0/1 judge on a 0/1 label scale keeps its verdicts; anything else is mapped by rank at the labels' rates."""
    assert cert.to_scale(scores, labels, categories).tolist() == expected
