"""The hard set: its shape, its blind copy, its label files and the judge check before and after the second pass."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.analysis import certify as cert
from core.analysis import hard_set as hs

BRIEF_PHENOMENA = {"paraphrase", "invented_number", "negation", "hedging", "partial_answer", "conflict", "refusal"}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_suite_is_large_balanced_and_covers_every_phenomenon() -> None:
    items = hs.load_items()
    assert len(items) >= 200 and len({i.id for i in items}) == len(items)
    by_language = Counter(i.language for i in items)
    assert set(by_language) == {"en", "zh", "ja"} and max(by_language.values()) - min(by_language.values()) <= 10
    assert {i.phenomenon for i in items} >= BRIEF_PHENOMENA


def test_construction_labels_cover_every_item_and_both_sides() -> None:
    items = hs.load_items()
    labels = hs.load_labels(items).passes["construction"]
    assert set(labels) == {(i.id, a) for i in items for a in hs.ASPECTS}
    for aspect in hs.ASPECTS:
        assert set(labels[(i.id, a)] for i in items for a in [aspect]) == set(hs.LABELS[aspect])
    sides = {p: {labels[(i.id, "faithfulness")] for i in items if i.phenomenon == p} for p in BRIEF_PHENOMENA}
    # hedging, negation, conflict and paraphrase are not labels in disguise: each has items on both sides
    assert all(len(sides[p]) == 2 for p in ("hedging", "negation", "conflict"))


def test_the_blind_copy_is_the_items_without_phenomenon_or_labels() -> None:
    full = {r["id"]: r for r in _lines(hs.FOLDER / hs.ITEMS)}
    blind = _lines(hs.FOLDER / hs.BLIND)
    assert {r["id"]: r for r in blind} == {k: {f: v for f, v in r.items() if f != "phenomenon"} for k, r in full.items()}
    assert [r["id"] for r in blind] != list(full)  # shuffled: the order gives nothing away
    assert not any({"label", "phenomenon", "note"} & set(r) for r in blind)


@pytest.mark.parametrize(("name", "line", "message"), [
    ("unknown id", {"id": "hs-xx-99z", "aspect": "faithfulness", "label": "supported"}, "line 1: field 'id'"),
    ("unknown aspect", {"id": "hs-en-01a", "aspect": "tone", "label": "supported"}, "line 1: field 'aspect'"),
    ("label of the other aspect", {"id": "hs-en-01a", "aspect": "faithfulness", "label": "complete"},
     "line 1: field 'label'"),
    ("missing label", {"id": "hs-en-01a", "aspect": "faithfulness"}, "line 1: field 'label'"),
])
def test_a_bad_label_line_is_named_by_line_and_field(tmp_path, name, line, message) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        hs.read_labels(path, {i.id for i in hs.load_items()})


def test_a_later_line_supersedes_an_earlier_one(tmp_path) -> None:
    path = tmp_path / "labels.jsonl"
    rows = [{"id": "hs-en-01a", "aspect": "faithfulness", "label": v} for v in ("unsupported", "supported")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert hs.read_labels(path, {"hs-en-01a"}) == {("hs-en-01a", "faithfulness"): "supported"}


def second_pass(folder: Path, flip_every: int, adjudicate: int = 0, balanced: bool = False) -> None:
    """A copy of the suite with a second pass: the construction labels, every `flip_every`-th one flipped (with
    `balanced`, only as many one way as the other per aspect, so each label's rate is kept), and the first
    `adjudicate` disagreements adjudicated."""
    (folder / "blind").mkdir(parents=True)
    for name in (hs.ITEMS, hs.BLIND, hs.PASSES["construction"]):
        shutil.copy(hs.FOLDER / name, folder / name)
    rows, flipped = _lines(hs.FOLDER / hs.PASSES["construction"]), []
    picked = [n for n in range(len(rows)) if n % flip_every == 0]
    if balanced:
        ways = {(a, v): [n for n in picked if rows[n]["aspect"] == a and rows[n]["label"] == v]
                for a, vs in hs.LABELS.items() for v in vs}
        picked = [n for a, (x, y) in hs.LABELS.items() for side in (x, y)
                  for n in ways[(a, side)][:min(len(ways[(a, x)]), len(ways[(a, y)]))]]
    chosen = set(picked)
    for n, row in enumerate(rows):
        row["annotator"] = hs.SECOND
        if n in chosen:
            a, b = hs.LABELS[row["aspect"]]
            row["label"] = b if row["label"] == a else a
            flipped.append(row)
    (folder / hs.PASSES[hs.SECOND]).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    adj = [{"id": r["id"], "aspect": r["aspect"], "label": r["label"], "reason": "rule 1", "adjudicator": "test"}
           for r in flipped[:adjudicate]]
    (folder / hs.ADJUDICATION).write_text("".join(json.dumps(r) + "\n" for r in adj), encoding="utf-8")


def test_disagreements_are_listed_with_their_adjudication(tmp_path) -> None:
    second_pass(tmp_path, flip_every=10, adjudicate=5)
    items = hs.load_items(tmp_path)
    labels = hs.load_labels(items, tmp_path)
    found = hs.disagreements(items, labels)
    assert len(found) == len(range(0, 2 * len(items), 10))
    assert sum(d.adjudicated is not None for d in found) == 5
    summary = hs.labelling(items, labels)
    assert summary["second_pass"] == "complete" and summary["disagreements"] == len(found)
    assert summary["adjudicated"] == 5


def test_without_the_second_pass_the_verdict_is_a_state(tmp_path) -> None:
    """Only the construction labels: judge and baseline rows are computed, the annotator row is missing, and the
    verdict is undetermined with the reason named."""
    (tmp_path / "blind").mkdir()
    for name in (hs.ITEMS, hs.PASSES["construction"]):
        shutil.copy(hs.FOLDER / name, tmp_path / name)
    items = hs.load_items(tmp_path)
    labels = hs.load_labels(items, tmp_path)
    assert labels.state(len(items)) == "missing"
    scores = [{"faithfulness": float(n % 3), "completeness": float(n % 2)} for n in range(len(items))]
    for c in hs.certify_items(items, scores, labels, resamples=50):
        assert c.verdict == cert.UNDETERMINED and "second labelling pass missing" in c.note
        assert c.pair_row == hs.PAIR_ROW and c.judge.n_items == len(items)


@pytest.mark.parametrize(("name", "dropped", "state"), [
    ("every item in both passes", 0, "complete"),
    ("one item without a second label", 1, "missing for 1 items"),
    ("twelve items without a second label", 12, "missing for 12 items"),
])
def test_items_the_second_pass_has_not_labelled_are_a_state(tmp_path, name, dropped, state) -> None:
    """A second pass that stops short of the last items: the state names how many, the annotator row covers the
    items both passes labelled, and the verdict stays undetermined with that reason."""
    second_pass(tmp_path, flip_every=10 ** 6)
    path = tmp_path / hs.PASSES[hs.SECOND]
    rows = _lines(path)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:len(rows) - 2 * dropped]), encoding="utf-8")
    items = hs.load_items(tmp_path)
    labels = hs.load_labels(items, tmp_path)
    assert labels.state(len(items)) == state
    assert hs.labelling(items, labels)["agreement"]["completeness (all)"]["n_items"] == len(items) - dropped
    scores = [{"faithfulness": float(n % 3), "completeness": float(n % 2)} for n in range(len(items))]
    for c in hs.certify_items(items, scores, labels, resamples=50):
        assert c.judge.n_items == len(items)
        if dropped:
            assert c.verdict == cert.UNDETERMINED and f"second labelling pass {state}" in c.note
        else:
            assert c.note == ""


def test_with_both_passes_a_judge_as_good_as_the_labels_is_rated(tmp_path) -> None:
    """A judge that reproduces the construction labels, against two passes agreeing on about 90% of labels (the flips
    balanced: a binary judge is mapped to the labels' rates by rank, and a pass tilted towards one label would map
    all its tied scores to one category): non-inferior, better than every baseline, so fit to decide."""
    second_pass(tmp_path, flip_every=5, balanced=True)
    items = hs.load_items(tmp_path)
    labels = hs.load_labels(items, tmp_path)
    truth = labels.passes["construction"]
    scores = [{a: float(hs.LABELS[a].index(truth[(i.id, a)])) for a in hs.ASPECTS} for i in items]
    for c in hs.certify_items(items, scores, labels, resamples=200):
        assert c.note == "" and c.human.n_items == len(items) and c.verdict == cert.DECIDE


def test_judge_check_cli_says_the_second_pass_is_missing(db_url, tmp_path, monkeypatch) -> None:
    from core.cli import app

    (tmp_path / "blind").mkdir()
    for name in (hs.ITEMS, hs.PASSES["construction"]):
        shutil.copy(hs.FOLDER / name, tmp_path / name)
    monkeypatch.setattr(hs, "FOLDER", tmp_path)
    result = CliRunner().invoke(app, ["judge", "check", "heuristic", "--suite", "hard_set", "--no-store"])
    assert result.exit_code == 0, result.output
    out = result.output
    for aspect in hs.ASPECTS:
        assert f"verdict, {aspect}: UNDETERMINED" in out
    for row in ("judge", "baseline: word overlap", "baseline: answer length", "baseline: majority label"):
        assert sum(line.startswith(f"  {row:<26} ") for line in out.splitlines()) == 2, row
    assert out.count(f"  {hs.PAIR_ROW:<26}      - second labelling pass missing") == 2
    assert "not human labels" in out and "second pass missing" in out
    listed = CliRunner().invoke(app, ["judge", "disagreements", "--suite", "hard_set"])
    assert "the second labelling pass is missing" in listed.output


def test_the_shipped_passes_and_their_agreement() -> None:
    """Both passes are shipped for every item (a pass that misses items is a state, tested above); every disagreement
    is adjudicated with a reason; the annotator-annotator kappa is the one docs/judges.md quotes."""
    items = hs.load_items()
    labels = hs.load_labels(items)
    second = {r["id"] for r in _lines(hs.FOLDER / hs.PASSES[hs.SECOND])}
    unlabelled = [i.id for i in items if i.id not in second]  # items added after the second pass (the length set)
    assert labels.state(len(items)) == (f"missing for {len(unlabelled)} items" if unlabelled else "complete")
    found = hs.disagreements(items, labels)
    assert found and all(d.adjudicated and d.reason and d.adjudicator for d in found)
    agreement = hs.pass_agreement(items, labels, resamples=200)
    assert agreement["faithfulness (all)"]["n_items"] == len(items) - len(unlabelled) == 252
    assert round(agreement["faithfulness (all)"]["kappa"], 2) == 0.98
    assert round(agreement["completeness (all)"]["kappa"], 2) == 0.99


def test_judge_check_cli_with_both_passes(db_url, tmp_path, monkeypatch) -> None:
    from core.cli import app

    second_pass(tmp_path, flip_every=7, adjudicate=3)
    monkeypatch.setattr(hs, "FOLDER", tmp_path)
    result = CliRunner().invoke(app, ["judge", "check", "heuristic", "--suite", "hard_set", "--no-store"])
    assert result.exit_code == 0, result.output
    assert result.output.count(f"  {hs.PAIR_ROW:<26}   0.") == 2 and "UNDETERMINED" not in result.output
    listed = CliRunner().invoke(app, ["judge", "disagreements", "--suite", "hard_set"])
    assert listed.exit_code == 0, listed.output
    assert listed.output.count("adjudicated ") == 1 + 3 and "NOT ADJUDICATED" in listed.output


def test_an_undefined_agreement_is_stored_as_null_and_printed_as_undefined(tmp_path) -> None:
    """Two passes that each give one label on a subset: kappa is undefined; the stored summary holds null (JSON, and
    PostgreSQL, have no NaN) and the printed line says 'undefined'."""
    from core.commands.judge import format_labelling

    second_pass(tmp_path, flip_every=10 ** 6)
    every = hs.load_items(tmp_path)
    items = [i for i in every if i.id in ("hs-en-02a", "hs-en-05a", "hs-en-08a")]  # supported in both passes
    summary = hs.labelling(items, hs.load_labels(every, tmp_path))
    assert summary["agreement"]["faithfulness (all)"]["kappa"] is None
    json.dumps(summary, allow_nan=False)
    assert "faithfulness (all): kappa undefined [undefined, undefined]" in "\n".join(format_labelling(summary))


def test_estimate_only_on_a_passage_suite_runs_nothing(db_url) -> None:
    from core.cli import app

    result = CliRunner().invoke(app, ["judge", "check", "heuristic", "--suite", "hard_set", "--estimate-only"])
    assert result.exit_code == 2 and "nothing was run" in result.output and "certification" not in result.output
