"""Gold labels saved after a page computed its judge-corrected estimates show on the page's next run, in the same
process and with the same caches (the corrected estimates are cached per gold-label version), without a reload."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest

from core.review.gold import draw_gold_sample, record_adjudication, record_gold_label
from core.store.labels import gold_labels
from tests.pages.test_dashboards import page_as
from tests.test_alignment import _labels, store
from tests.workspace_factories import principal, seeded_db

NO_GOLD = "No gold labels on these runs yet"


def _texts(at: AppTest) -> list[str]:
    return [e.value for e in (*at.info, *at.warning, *at.caption)]


def _leaderboard_shows_gold(at: AppTest) -> bool:
    tables = [d.value for d in at.dataframe if "corrected [95% CI]" in d.value.columns]
    return not any(NO_GOLD in t for t in _texts(at)) and bool(tables) and int(tables[-1]["n"].sum()) > 0


def _picker_shows_gold(at: AppTest) -> bool:
    return any("gold labels" in t for t in _texts(at))


@pytest.mark.parametrize(("page", "shows_gold"), [
    pytest.param("leaderboard", _leaderboard_shows_gold, id="leaderboard-corrected-section"),
    pytest.param("pick_generator", _picker_shows_gold, id="pick-generator-corrected-check"),
])
def test_labels_saved_after_a_first_computation_show_on_the_next_run(tmp_path, monkeypatch, page: str,
                                                                    shows_gold: Callable[[AppTest], bool]) -> None:
    s = seeded_db(tmp_path)
    rids = [s.responses[k] for k in [("model-a", "E-noisy"), ("model-b", "E-noisy"), ("model-a", "E-gap"),
                                     ("model-b", "E-gap")]]
    store(s.engine, "llm:j1", {**{(r, c): 1 for r in rids for c in ("c1", "c2")},
                               **{(r, "rejection"): 1 for r in rids[2:]}})
    draw_gold_sample(s.engine, principal("admin"), s.run_id, n=8, experts=["alice", "bob"])
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", str(s.engine.url))
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = page_as(page, "analyst").run()
    assert not at.exception, at.exception
    assert not shows_gold(at)
    for i, rid in enumerate(rids):
        label = _labels(1, i % 2, **({"valid_refusal": 1} if i >= 2 else {}))
        record_gold_label(s.engine, principal("alice"), rid, label, f"fresh-a{i}")
        record_gold_label(s.engine, principal("bob"), rid, label, f"fresh-b{i}")
    record_adjudication(s.engine, principal("admin"), rids[0], _labels(1, 1), "fresh-adj")
    assert len(gold_labels(s.engine, [s.run_id])) == 4
    at.run()
    assert not at.exception, at.exception
    assert shows_gold(at), _texts(at)
