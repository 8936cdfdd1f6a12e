"""The importer parts: residue and restore, JSON-array line numbers, table detection, instruction mapping, and
where each format's fields land in the instance model."""

from __future__ import annotations

import json

import pytest

from core.ingest.importers import IMPORTERS, get_importer, source_record
from core.ingest.importers.base import _MISSING, read_json_array, residue, restore
from core.ingest.importers.domainrag import subset_of
from core.ingest.importers.instructions import FOLLOWRAG_IDS, sub_dimension
from core.ingest.importers.lit_ragbench import content_type
from core.registry import UnknownNameError
from core.scoring.checkers import CHECKERS
from core.store.schema import SUB_DIMENSIONS_BY_CATEGORY
from tests.importers.conftest import FIXTURES, shared, write_records


@pytest.mark.parametrize(
    ("record", "typed", "rest"),
    [
        pytest.param({"a": 1}, {"a": 1}, _MISSING, id="all-typed"),
        pytest.param({"a": 1, "b": [2]}, {"a": 1}, {"b": [2]}, id="untyped-field-kept"),
        pytest.param({"a": True}, {"a": 1}, {"a": True}, id="bool-is-not-int"),
        pytest.param({"a": 1}, {"a": 1, "b": None}, {"$absent": ["b"]}, id="field-the-record-lacks"),
        pytest.param([{"t": "x", "d": 1}], [{"t": "x"}], [{"d": 1}], id="list-of-objects-elementwise"),
        pytest.param([{"t": "x"}, {"t": ""}], [{"t": "x"}], [{}, {"t": ""}], id="skipped-last-item"),
        pytest.param([{"t": ""}, {"t": "y"}], [{}, {"t": "y"}], [{"t": ""}, {}], id="skipped-middle-item"),
        pytest.param([{"a": 1}], [{"a": 1}, {"a": 2}], [{"a": 1}], id="typed-list-longer"),
        pytest.param("s", ["s"], "s", id="shape-differs"),
        pytest.param({"x": {"y": [1, 2]}}, {"x": {"y": [1]}}, {"x": {"y": [1, 2]}}, id="nested-scalar-list"),
    ],
)
def test_residue_keeps_what_typed_fields_miss_and_restores_exactly(record, typed, rest) -> None:
    assert residue(record, typed) == rest
    assert restore(typed, rest) == record


@pytest.mark.parametrize(
    ("text", "lines", "error"),
    [
        pytest.param('[{"a": 1}, {"a": 2}]', [1, 1], None, id="one-line"),
        pytest.param('[\n  {\n    "a": 1\n  },\n  {\n    "a": 2\n  }\n]\n', [2, 5], None, id="pretty"),
        pytest.param("[]", [], None, id="empty"),
        pytest.param('[\n{"a": 1},\n{"a": }\n]', [2], "line 3: malformed JSON", id="bad-record"),
        pytest.param('[\n{"a": 1}\n{"a": 2}\n]', [2], "line 3: malformed JSON: expected ','", id="missing-comma"),
    ],
)
def test_json_arrays_give_each_record_the_line_it_starts_on(text, lines, error) -> None:
    records, errors = read_json_array(text)
    assert [line for line, _ in records] == lines
    assert [str(e).startswith(error) for e in errors] == ([True] if error else [])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("<table>\n<tr><td>1</td></tr>\n</table>", "html", id="html-table"),
        pytest.param("Intro line\n<table><tr><th>a</th></tr></table>", "html", id="html-table-after-caption"),
        pytest.param("<!DOCTYPE html>\n<html><body><h1>t</h1></body></html>", "html", id="html-page"),
        pytest.param("| a | b |\n|---|---|\n| 1 | 2 |", "markdown_table", id="markdown"),
        pytest.param("Caption | a | b\n| 1 | 2 | 3\n| 4 | 5 | 6", "markdown_table", id="pipes-without-separator"),
        pytest.param("表 | 名前 | 値/n|:--|:--|/n| 1 | 2 |", "markdown_table", id="literal-slash-n-rows"),
        pytest.param("Sales table\nq,sales,profit\nQ1,10,2\nQ2,12,3", "csv", id="csv-after-caption"),
        pytest.param("We grew, as planned, in Q1.\nCosts fell, then rose, sharply.\nOverall, it was fine, we think.",
                     "text", id="prose-with-commas"),
        pytest.param("Just a paragraph of text.", "text", id="plain"),
    ],
)
def test_tables_get_their_content_type_when_recognisable(text, expected) -> None:
    assert content_type(text) == expected


def test_followrag_instruction_names_are_ifeval_checkers_and_output_constraints() -> None:
    assert set(FOLLOWRAG_IDS.values()) <= set(CHECKERS.names())
    assert len(set(FOLLOWRAG_IDS.values())) == len(FOLLOWRAG_IDS)
    ifeval = [name for name in CHECKERS.names() if not name.startswith("enterprise:")]
    assert {sub_dimension(name) for name in ifeval} <= set(SUB_DIMENSIONS_BY_CATEGORY["output"])


def test_unknown_format_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match="unknown import format 'squad'; known: crag, domainrag"):
        get_importer("squad")
    assert {"jsonl", "lit-ragbench", "hotpotqa", "mmlu", "medqa", "domainrag", "rgb", "ramdocs", "crag", "followrag",
            "ifeval", "triviaqa", "searchqa"} == set(IMPORTERS.names())


@pytest.mark.parametrize(
    ("keys", "subset"),
    [
        pytest.param({"question", "positive_reference", "answers"}, "extractive", id="extractive"),
        pytest.param({"history_qa", "question"}, "conversational", id="conversational"),
        pytest.param({"positive_html", "url"}, "structural", id="structural"),
        pytest.param({"counterfact_reference"}, "faithful", id="faithful"),
        pytest.param({"date", "answers"}, "time_sensitive", id="time-sensitive"),
        pytest.param({"referred_docs", "positive_references"}, "multidoc", id="multidoc"),
        pytest.param({"noisy_reference"}, "noisy", id="noisy"),
    ],
)
def test_domainrag_subset_is_told_by_its_fields(keys, subset) -> None:
    assert subset_of(dict.fromkeys(keys)) == subset


def _first(fmt: str, path, index: int = 0):
    report = get_importer(fmt).parse(path)
    assert report.ok, report.errors[:3]
    return report.instances[index][1]


def _domainrag(name: str):
    return lambda: shared(f"datasets/domainrag/{name}")


MAPPINGS = [
    pytest.param("lit-ragbench", lambda: shared("datasets/lit-ragbench/en.jsonl"), 0,
                 lambda s: (s.reference.answer_type, s.attributes.categories, s.reference.reasoning is not None),
                 ("short", ["Reasoning"], True), id="lit-ragbench-reasoning"),
    pytest.param("lit-ragbench", lambda: shared("datasets/lit-ragbench/ja.jsonl"), 113,
                 lambda s: (s.language, s.reference.answer_type, s.attributes.categories[0], len(s.documents) > 0),
                 ("ja", "unanswerable", "Abstention", True), id="lit-ragbench-abstention"),
    pytest.param("hotpotqa", lambda: shared("datasets/hotpotqa-dev-distractor/hotpotqa_dev_distractor_500.jsonl"), 0,
                 lambda s: (s.attributes.question_type, s.attributes.categories,
                            sorted((d.title, d.variant["supporting_sentences"]) for d in s.documents
                                   if d.role == "supporting"), sum(d.role == "noise" for d in s.documents)),
                 ("comparison", ["hard"], [("Denise Levertov", [0]), ("Harvey Pekar", [0])], 8), id="hotpotqa"),
    pytest.param("mmlu", lambda: shared("datasets/mmlu/ragstress_eval700_stratified_seed42.jsonl"), 0,
                 lambda s: (s.id, s.reference.answer_type, s.reference.answer_key, s.attributes.categories,
                            s.attributes.aspects, s.documents),
                 ("mmlu/abstract_algebra/3", "mcq", "B", ["STEM"], ["abstract_algebra"], []), id="mmlu"),
    pytest.param("medqa", lambda: shared("datasets/medqa-mcmle-pulse150/medqa_mcmle_test_sample150_5opt.jsonl"), 0,
                 lambda s: (s.language, sorted(s.reference.choices), s.reference.answer_key,
                            s.reference.answers[0].text),
                 ("zh", ["A", "B", "C", "D", "E"], "E", "24小时内"), id="medqa-mcmle"),
    pytest.param("domainrag", _domainrag("extractive_qa.jsonl"), 0,
                 lambda s: (s.reference.answers[0].parts, s.documents[0].source != "", s.metadata["segmentation"]),
                 (["汉语", "法语", "英语"], True, "whitespace"), id="domainrag-parts"),
    pytest.param("domainrag", _domainrag("conversational_qa.jsonl"), 1,
                 lambda s: ([t.role for t in s.attributes.history], s.reference.answer_type),
                 (["user", "assistant", "user", "assistant"], "long"), id="domainrag-history"),
    pytest.param("domainrag", _domainrag("structural_qa.jsonl"), 0,
                 lambda s: sorted(d.content_type for d in s.documents), ["html", "text"], id="domainrag-html-vs-text"),
    pytest.param("domainrag", _domainrag("faithful_qa.jsonl"), 0,
                 lambda s: ([(d.role, d.variant) for d in s.documents], s.reference.wrong_answers),
                 ([("supporting", {}), ("counterfactual", {"kind": "anti_reference", "answer": "2021年12月19日11:00"})],
                  ["2021年12月19日11:00", "2021年12月19日上午11点"]), id="domainrag-anti-reference"),
    pytest.param("domainrag", _domainrag("time_sensitive_qa.jsonl"), 0, lambda s: s.attributes.date, "2023",
                 id="domainrag-date"),
    pytest.param("ifeval", lambda: shared("ifeval/input_data.jsonl"), 0,
                 lambda s: (s.protocol, s.reference, s.documents, [c.checker_id for c in s.constraints],
                            s.constraints[1].checker_kwargs),
                 ("instruction_following", None, [], ["punctuation:no_comma",
                                                      "detectable_format:number_highlighted_sections",
                                                      "length_constraints:number_words"], {"num_highlights": 3}),
                 id="ifeval"),
    pytest.param("rgb", lambda: FIXTURES / "rgb_en.json", 2,
                 lambda s: (s.reference.answer_type, [(a.text, a.aliases) for a in s.reference.answers]),
                 ("multi", [("Arle", []), ("Soane", ["River Soane"])]), id="rgb-aliases"),
    pytest.param("rgb", lambda: FIXTURES / "rgb_en_fact.json", 0,
                 lambda s: (s.reference.wrong_answers, sorted({(d.role, d.variant.get("kind")) for d in s.documents})),
                 (["Ashby"], [("counterfactual", "anti_reference"), ("noise", None), ("supporting", None)]),
                 id="rgb-counterfactual"),
    pytest.param("ramdocs", lambda: FIXTURES / "ramdocs.jsonl", 0,
                 lambda s: (s.reference.answer_type, s.reference.wrong_answers, [d.role for d in s.documents]),
                 ("multi", ["Port Ivy"], ["supporting", "supporting", "counterfactual", "noise"]), id="ramdocs"),
    pytest.param("crag", lambda: FIXTURES / "crag.jsonl", 1,
                 lambda s: (s.reference.answer_type, [d.content_type for d in s.documents], s.attributes.date),
                 ("unanswerable", ["html", "text"], "02/01/2031, 08:00:00 PT"), id="crag-false-premise"),
    pytest.param("followrag", lambda: FIXTURES / "followrag.json", 0,
                 lambda s: ([c.checker_id for c in s.constraints], s.constraints[2].checker_kwargs),
                 (["combination:repeat_prompt", "detectable_format:title", "length_constraints:number_words"],
                  {"relation": "less than", "num_words": 120}), id="followrag"),
]


@pytest.mark.parametrize(("fmt", "path", "index", "extract", "expected"), MAPPINGS)
def test_source_fields_land_in_typed_fields(fmt, path, index, extract, expected) -> None:
    assert extract(_first(fmt, path(), index)) == expected


def test_an_mmlu_csv_row_and_its_jsonl_selection_are_the_same_instance(tmp_path) -> None:
    selection = tmp_path / "selection.jsonl"
    line = shared("datasets/mmlu/ragstress_eval700_stratified_seed42.jsonl").read_text(encoding="utf-8").splitlines()[0]
    selection.write_text(line + "\n", encoding="utf-8")
    from_jsonl = _first("mmlu", selection)
    from_csv = _first("mmlu", shared("datasets/mmlu/test/abstract_algebra_test.csv"), json.loads(line)["row"])
    assert from_csv.model_dump(exclude={"metadata"}) == from_jsonl.model_dump(exclude={"metadata"})


def test_followrag_instructions_unknown_to_the_registry_are_judged_and_stay_in_the_source_record(tmp_path) -> None:
    record = json.loads((FIXTURES / "followrag.json").read_text(encoding="utf-8"))[1]
    record["instruction_id_list"].insert(0, "structure_poem")
    record["kwargs"].insert(0, {"lines": 14})
    path = tmp_path / "followrag.json"
    path.write_text(json.dumps([record], indent=4), encoding="utf-8")
    spec = _first("followrag", path)
    assert [(c.id, c.judge_method, c.checker_id) for c in spec.constraints] == [
        ("c1", "llm", None), ("c2", "rule", "change_case:english_lowercase"), ("c3", "rule", "punctuation:no_comma")]
    assert spec.constraints[0].criterion == ("The response follows the instruction 'structure_poem' with "
                                             '{"lines": 14} as the question states it.')
    assert spec.metadata["unchecked_instructions"] == ["structure_poem"]
    assert source_record(spec) == record


def test_a_repeated_record_is_a_duplicate_id_on_its_source_lines(tmp_path) -> None:
    records = json.loads((FIXTURES / "followrag.json").read_text(encoding="utf-8"))
    path = tmp_path / "followrag.json"
    lines = write_records(path, [*records, records[0]], "json")
    report = get_importer("followrag").parse(path)
    assert [str(e) for e in report.errors] == [
        f"line {lines[3]}: id: duplicate instance id 'followrag/ifnq/0' (first on line {lines[0]})"]


@pytest.mark.parametrize("line", [pytest.param(b"[" * 100_000 + b"]" * 100_000, id="deep-nesting"),
                                  pytest.param(b'{"a": NaN}', id="nan"), pytest.param(b"1" * 5000, id="huge-number")])
def test_hostile_jsonl_lines_are_line_errors_not_tracebacks(line) -> None:
    from core.ingest.importers.base import read_jsonl

    records, errors = read_jsonl(b'{"ok": 1}\n' + line + b"\n")
    assert len(records) == 1 and [e.line for e in errors] == [2] and "malformed JSON" in errors[0].message
