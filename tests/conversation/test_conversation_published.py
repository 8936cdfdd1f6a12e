"""Calibration on MTRAG-UN's published records (IBM/mt-rag-benchmark, commit cc5b1d4,
`mtragun-human/generation_tasks/reference.jsonl`, read from ../shared/datasets/mtrag/, never copied): the file's
first 12 tasks, answered through the real openai and anthropic SDKs on the loopback server by scripted gold (the
published reference answer), wrong and always-refuse models, on the active backend. Gold scores answer quality 1 and
a drop of 0 and handles every turn (the refusal rule reads the annotators' declines, data/reading/declines.yaml;
1 of the 4 unanswerable and partial turns before it); wrong scores 0; always-refuse handles every unanswerable and
partial turn."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.protocols.conversation import HANDLING, LATER_DROP, QUALITY, UNANSWERABLE_HANDLING
from core.protocols.conversation.builder import build
from core.store.db import make_engine
from core.testing.fake_server import ScriptRule

MTRAG = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "mtrag" / "mtragun_generation_tasks_reference.jsonl"
WRONG = "Zorblat quints vexed."
REFUSAL = "I don't know: the documents do not say."


@dataclass(frozen=True)
class World:
    url: str
    run_id: int


def asked(query: str) -> str:
    return r"Question: " + re.escape(query.strip()) + r"\s*$"


@pytest.fixture(scope="module", params=["openai_compatible", "anthropic"])
def world(request, session_url_factory, tmp_path_factory) -> World:
    assert MTRAG.exists(), f"MTRAG-UN generation tasks not found at {MTRAG} (../shared/datasets/mtrag, see its README)"
    tmp = tmp_path_factory.mktemp("mtrag")
    records = [json.loads(line) for line in build(MTRAG, tmp, limit=12).out.read_text(encoding="utf-8").splitlines()]
    gold = [ScriptRule(match=asked(r["query"]), reply=(r.get("reference", {}).get("answers") or [{"text": REFUSAL}])
                       [0]["text"]) for r in records]
    scripts = {"mtrag-gold": gold, "mtrag-wrong": [ScriptRule(match="", reply=WRONG)],
               "mtrag-refuse": [ScriptRule(match="", reply=REFUSAL)]}
    url = session_url_factory()
    return World(url, scored_run(url, tmp / "mtrag.jsonl", records, scripts, request.param))


def scored_run(url: str, path: Path, records: list[dict], scripts: dict[str, list[ScriptRule]], provider: str) -> int:
    """Import the tasks, run every scripted model on their collections (one domain each) and score heuristically."""
    import asyncio

    from core.generation import runner, runs
    from core.generation.ratelimit import ManualClock
    from core.ingest.io import import_file
    from core.pipeline import score_and_summarise
    from tests.factories import scripted_models

    domains = sorted({r["domain"] for r in records})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    engine = make_engine(url)
    assert len(import_file(engine, path).created) == len(records)
    with scripted_models(engine, scripts, 1024, provider):
        run_id = runs.create_run(engine, runs.RunOptions(models=list(scripts), domains=domains))
        result = asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
        assert (result.status, result.failed) == ("done", 0)
        asyncio.run(score_and_summarise(engine, run_id, ["heuristic"]))
    engine.dispose()
    return run_id


CALIBRATION = [  # model -> answer quality, handling, unanswerable handling, drop (None: only bounded)
    pytest.param("mtrag-gold", 1.0, 1.0, 1.0, 0.0, id="gold"),
    pytest.param("mtrag-wrong", 0.0, 8 / 12, 0.0, 0.0, id="wrong"),
    pytest.param("mtrag-refuse", None, 4 / 12, 1.0, None, id="always-refuse"),
]


@pytest.mark.parametrize(("model", "quality", "handling", "unanswerable", "drop"), CALIBRATION)
def test_calibration_on_published_tasks(world, model, quality, handling, unanswerable, drop) -> None:
    from core.protocols.conversation.analysis import later_turn_drop, turn_scores

    engine = make_engine(world.url)
    scores = turn_scores(engine, [world.run_id], "heuristic")
    mine = scores[scores["model"] == model]
    assert len(mine) == 12 and mine[QUALITY].notna().sum() == 11  # the unanswerable task has no reference answer
    assert (mine[HANDLING].mean(), mine[UNANSWERABLE_HANDLING].mean()) == (pytest.approx(handling),
                                                                          pytest.approx(unanswerable))
    if quality is None:
        assert mine[QUALITY].max() < 0.15  # the refusal shares a few words with some references
    else:
        assert mine[QUALITY].mean() == pytest.approx(quality)
    row = later_turn_drop(engine, [world.run_id], "heuristic").set_index("model").loc[model]
    assert (row["n"], row["n_early"], row["n_later"]) == (6, 5, 6)  # each task its own conversation: pooled early
    assert -1.0 <= row["ci_low"] <= row["value"] <= row["ci_high"] <= 1.0 and row["metric"] == LATER_DROP
    if drop is not None:
        assert row["value"] == pytest.approx(drop)
