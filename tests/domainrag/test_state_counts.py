"""The Domain abilities page under every score state: a caption under each table and chart with each state's count,
and the count columns in the CSV beside it (see tests/pages/state_counts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine

from tests.domainrag.conftest import GOLD
from tests.pages import state_counts as sc

# One xdist worker builds the session-scoped fixture these modules share (built once, not once per worker)
pytestmark = pytest.mark.xdist_group("domainrag-world")

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "domain_abilities.py")
GOLDEN = ""  # the golden reference: a setting of its own, one condition, so each question counts once


@pytest.mark.parametrize(("prefix", "widgets", "csv"), [
    pytest.param("Questions behind the ability setting chart", {"dr_grid_model": GOLD},
                 "domainrag_ability_setting.csv", id="ability-by-setting"),
])
def test_every_state_is_counted_under_the_view(world, monkeypatch, prefix, widgets, csv) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    spy = sc.DownloadSpy(monkeypatch)
    before = sc.caption_counts(sc.captions_with(sc.open_page(PAGE, widgets), prefix)[0])
    engine = create_engine(world.url)
    with sc.injected_states(engine, run_ids=[world.run_id], judge="heuristic", metric="exact_match", model=GOLD,
                         condition=GOLDEN, protocol="domainrag"):
        after = sc.caption_counts(sc.captions_with(sc.open_page(PAGE, widgets), prefix)[0])
        assert {state: after[state] - before[state] for state in after} == sc.DELTAS
        shown = spy.frame(csv)
        assert {state: int(shown[column].sum()) for state, column in sc.COUNT_COLUMNS.items()} == after
    engine.dispose()
