"""The importers on the files their authors publish (tests/fixtures/<format>/README.md: repository, commit, licence,
records kept): every record imports, none refused for shape, and the import round-trips byte-identically."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.ingest.importers import get_importer, import_source, source_record
from core.ingest.io import export_instances, import_file, validate_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RGB = ("chen700564/RGB", "65ec39e40e7dc9abb50e9bf1b4f32be3f6f16615")
RAMDOCS = ("HanNight/RAMDocs", "d44454c9ebb0bf513d8236a03decc9fb58704cad")
CRAG = ("facebookresearch/CRAG", "ad1518887dd4d9ebcd7de95388c7a62751e7705c")
FOLLOWRAG = ("dongguanting/FollowRAG", "fcc355be1f7486b269442aa85ea19eaaa855ff6a")
HOTPOT = ("Rakin061/hotpot", "077eab2e2b7c8e81a7d7baaea8d22f4f13f9ad3f")  # a fork of hotpotqa/hotpot carrying the file


@dataclass(frozen=True)
class Published:
    """A published file (or its excerpt) of one format: where it comes from and what importing it must give."""

    fmt: str
    file: str  # under tests/fixtures/
    source: tuple[str, str]  # repository, commit
    upstream: str  # the path in that repository
    records: int
    verbatim: frozenset[str] = frozenset()  # top-level fields kept under metadata.source rather than typed
    cleaned_fields: int = 0  # texts that held control characters
    odd_records: int = 0  # valid records that score oddly under the format's own rule (an importer's note on each)

    @property
    def path(self) -> Path:
        return FIXTURES / self.file


def _case(fmt: str, file: str, source: tuple[str, str], upstream: str, records: int,
          verbatim: set[str] | None = None, cleaned_fields: int = 0, odd_records: int = 0):
    case = Published(fmt, file, source, upstream, records, frozenset(verbatim or ()), cleaned_fields, odd_records)
    return pytest.param(case, id=file.replace("/", "-"))


PUBLISHED = [
    _case("rgb", "rgb/en_fact.json", RGB, "data/en_fact.json", 6),
    _case("rgb", "rgb/zh_fact.json", RGB, "data/zh_fact.json", 8),
    _case("rgb", "rgb/zh_int.json", RGB, "data/zh_int.json", 10, {"answer", "asnwer1", "answer2"}),
    _case("rgb", "rgb/zh_refine.json", RGB, "data/zh_refine.json", 6, {"answer"}),
    _case("ramdocs", "ramdocs/RAMDocs_test.jsonl", RAMDOCS, "RAMDocs_test.jsonl", 500,
          {"disambig_entity", "documents"}, cleaned_fields=20, odd_records=14),
    _case("crag", "crag/dev_data.jsonl.bz2", CRAG, "example_data/dev_data.jsonl.bz2", 3,
          {"alternative_answers", "search_results", "split"}),
    _case("followrag", "followrag/followRAG_ifhq.json", FOLLOWRAG, "FollowRAG/followRAG/followRAG_ifhq.json", 14,
          {"prompt", "question"}),
    _case("followrag", "followrag/followRAG_ifnq.json", FOLLOWRAG, "FollowRAG/followRAG/followRAG_ifnq.json", 15,
          {"prompt", "question"}),
    _case("followrag", "followrag/followRAG_iftq.json", FOLLOWRAG, "FollowRAG/followRAG/followRAG_iftq.json", 17,
          {"prompt", "question"}),
    _case("hotpotqa", "hotpotqa/hotpot_dev_distractor_v1.json", HOTPOT, "hotpot_dev_distractor_v1.json", 12,
          {"supporting_facts"}),  # kept verbatim where the facts are not listed in paragraph order
]


# The other six formats' published files are read from ../shared (never copied here); tests/importers/
# test_importers.py imports them (first records on both backends, whole files in its slow test).
SHARED_SOURCES = [
    pytest.param("lit-ragbench", "Koki-Itai/LIT-RAGBench", "5c3f30d924bc1615c08eb85f560f3aceb2fac7d4", id="lit-ragbench"),
    pytest.param("domainrag", "ShootingWong/DomainRAG", "f6ca1941a71ff19f6d73bd7588842bb92a6113e3", id="domainrag"),
    pytest.param("mmlu", "HaeChan0305/MLILAB-FedLLM", "d92730e8bacd7b3a61e551e015e40588e10234b4", id="mmlu"),
    pytest.param("hotpotqa", "megagonlabs/RPT", "cf2bc1b1b4edd0318b84179e732ec476c4e20a6e", id="hotpotqa"),
    pytest.param("medqa", "Teddy-XiongGZ/MIRAGE", "392943af99cd94cafd50a0de2e7fca24bbf65494", id="medqa-usmle"),
    pytest.param("medqa", "openmedlab/PULSE", "a4dd9b11db7c369a91d3a904bd5e864238631ef8", id="medqa-mcmle"),
    pytest.param("ifeval", "google-research/google-research", "19638399cc9e03623c5b9087a1d6fa8813974ce9", id="ifeval"),
]


@pytest.mark.parametrize("case", PUBLISHED)
def test_the_fixture_names_its_published_source(case) -> None:
    readme = (case.path.parent / "README.md").read_text(encoding="utf-8")
    assert all(part in readme for part in (*case.source, case.upstream.rpartition("/")[2].split("<")[0]))


@pytest.mark.parametrize(("fmt", "repository", "commit"), SHARED_SOURCES)
def test_the_shared_files_are_named_with_their_source(fmt, repository, commit) -> None:
    readme = (FIXTURES / fmt / "README.md").read_text(encoding="utf-8")
    assert f"https://github.com/{repository}" in readme and commit in readme


@pytest.mark.parametrize("case", PUBLISHED)
def test_every_published_record_imports_and_comes_back_exactly(case) -> None:
    importer = get_importer(case.fmt)
    records = [raw for _, raw in importer.read(case.path)[0]]
    parsed = importer.parse(case.path)
    assert parsed.ok, [str(e) for e in parsed.errors[:5]]
    specs = [spec for _, spec in parsed.instances]
    assert (len(records), len(specs)) == (case.records, case.records)
    assert [source_record(spec) for spec in specs] == records
    assert set().union(*(spec.metadata.get("source", {}) for spec in specs)) <= case.verbatim
    controls = [w for w in parsed.warnings if "control character" in w.message]
    assert (len(controls), len(parsed.warnings) - len(controls)) == (case.cleaned_fields, case.odd_records)


@pytest.mark.parametrize("case", PUBLISHED)
def test_published_files_round_trip_byte_identically(case, engine, second_engine, tmp_path) -> None:
    report = import_source(engine, case.path, fmt=case.fmt)
    assert report.ok and len(report.created) == case.records, [str(e) for e in report.errors[:5]]
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    export_instances(engine, first)
    assert import_file(second_engine, first).ok
    export_instances(second_engine, second)
    assert first.read_bytes() == second.read_bytes()
    records = [raw for _, raw in get_importer(case.fmt).read(case.path)[0]]
    exported = sorted(validate_file(second).instances, key=lambda item: item[1].id)
    assert sorted(map(_canonical, (source_record(spec) for _, spec in exported))) == sorted(map(_canonical, records))


def _canonical(record: object) -> str:
    return json.dumps(record, sort_keys=True, ensure_ascii=False)
