"""Each protocol builder reports its progress per item: progress(done, total) with done rising by one up to the total
(issue 28 item 1: the browser's build bar moves with the items, not by stage)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from core.config import REPO_ROOT
from core.protocols.domainrag.builder import FILES, BuildOptions, build_instances
from core.protocols.kb_corruption.builder import build_ragstress
from core.protocols.misleading_evidence.builder_plans import build_stress_file
from core.protocols.progress import Progress
from tests.domainrag.conftest import shared_data
from tests.kb_corruption.conftest import write_slice

HOTPOTQA = REPO_ROOT.parent / "shared" / "datasets" / "hotpotqa-dev-distractor" / "hotpotqa_dev_distractor_500.jsonl"


def _kb_corruption(tmp: Path, progress: Progress) -> int:
    build_ragstress(write_slice(tmp / "slice.jsonl", per=2), tmp / "out", embedder=None, index_dir=None,
                    progress=progress)
    return len((tmp / "slice.jsonl").read_text(encoding="utf-8").splitlines())


def _misleading_evidence(tmp: Path, progress: Progress) -> int:
    build_stress_file(HOTPOTQA, "hotpotqa", tmp / "instances.jsonl", limit=5, progress=progress)
    return 5


def _domainrag(tmp: Path, progress: Progress) -> int:
    build_instances(BuildOptions(data=shared_data(), embedder=None, index_dir=None, limit=1), progress)
    return len(FILES)  # one source row per sub-set


@pytest.mark.parametrize("build", [
    pytest.param(_kb_corruption, id="kb-corruption"),
    pytest.param(_misleading_evidence, id="misleading-evidence"),
    pytest.param(_domainrag, id="domainrag"),
])
def test_progress_counts_each_item_up_to_the_total(tmp_path, build: Callable[[Path, Progress], int]):
    calls: list[tuple[int, int]] = []
    items = build(tmp_path, lambda done, total: calls.append((done, total)))
    assert calls == [(done, items) for done in range(1, items + 1)]
