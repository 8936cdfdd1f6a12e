"""The generic pieces DomainRAG added: Chinese retrieval tokens, the repeat setting and conditions that apply to some
question types only."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from core.construction.corpus import CorpusDoc
from core.construction.retrieval import RetrievalConfig, Retriever, tokenize
from core.generation.runs import instance_conditions
from core.protocols import Condition
from core.protocols.prompting import DocumentView, condition_bundle


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("How often must the oil be changed", ["often", "oil", "changed"], id="english-unchanged"),
        pytest.param("every 4,000 hours", ["every", "4,000", "hours"], id="english-numbers-unchanged"),
        pytest.param("中国人民大学的校长是谁？", ["中国", "国人", "人民", "民大", "大学", "校长"], id="zh-bigrams-stopwords-out"),
        pytest.param("中国 人民 大学 的 校长 是 谁 ？", ["中国", "国人", "人民", "民大", "大学", "校长"], id="zh-segmented-same"),
        pytest.param("2022年 河北省 高考", ["2022", "年河", "河北", "北省", "省高", "高考"], id="digits-and-han"),
        pytest.param("ISO 认证", ["iso", "认证"], id="latin-and-han"),
        pytest.param("東京 タワー", ["東京", "京タ", "タワ", "ワー"], id="ja-kanji-katakana"),
    ],
)
def test_tokenize_handles_chinese_without_changing_english(text, expected) -> None:
    assert tokenize(text) == expected


def test_bm25_finds_segmented_chinese_passages_for_unsegmented_questions() -> None:
    docs = [CorpusDoc("fee", "d", "学费", "本科 学费 每年 5000 元 ， 住宿费 另 计 。"),
            CorpusDoc("dorm", "d", "宿舍", "新生 宿舍 位于 东区 ， 四人 一间 。"),
            CorpusDoc("plan", "d", "招生", "2022 年 招生 计划 共 2800 人 。")]
    retriever = Retriever(docs, RetrievalConfig(embedder=None, index_dir=None))
    found = {q: retriever.search(q, 1, mode="bm25")[0].doc_id
             for q in ("本科学费每年多少？", "新生宿舍在哪里？", "2022年招生计划多少人？")}
    assert found == {"本科学费每年多少？": "fee", "新生宿舍在哪里？": "dorm", "2022年招生计划多少人？": "plan"}


def _doc(uid: str, role: str, position: int) -> DocumentView:
    return DocumentView(doc_uid=uid, position=position, title=uid, text=f"text {uid}", role=role)


BUNDLE = [_doc("n1", "noise", 0), _doc("g", "supporting", 1), _doc("n2", "noise", 2), _doc("n3", "noise", 3)]


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        pytest.param({"repeat": 3}, ["n1", "g", "g", "g", "n2", "n3"], id="repeat-in-place"),
        pytest.param({"repeat": 3, "noise": 0}, ["g", "g", "g"], id="repeated-gold-only"),
        pytest.param({"repeat": 2, "order": "support_last"}, ["n1", "n2", "n3", "g", "g"], id="copies-stay-together"),
        pytest.param({"repeat": 1}, ["n1", "g", "n2", "n3"], id="once-is-unchanged"),
    ],
)
def test_repeat_setting(settings, expected) -> None:
    assert [d.doc_uid for d in condition_bundle(BUNDLE, settings)[0]] == expected


@pytest.mark.parametrize("value", [pytest.param(0, id="zero"), pytest.param(True, id="bool"),
                                   pytest.param("2", id="string")])
def test_a_bad_repeat_value_is_refused(value) -> None:
    with pytest.raises(ValueError, match="repeat"):
        Condition("x", "x", {"repeat": value})


@pytest.mark.parametrize(
    ("attributes", "applies"),
    [
        pytest.param({"question_type": "extractive"}, True, id="listed"),
        pytest.param({"question_type": "structural"}, False, id="not-listed"),
        pytest.param({}, False, id="no-question-type"),
        pytest.param(None, False, id="no-attributes"),
    ],
)
def test_a_condition_applies_to_its_question_types(attributes, applies) -> None:
    assert Condition("x", "x", {}, ("extractive", "time_sensitive")).applies(attributes) is applies
    assert Condition("y", "y").applies(attributes) is True


def test_run_items_skip_conditions_that_do_not_apply() -> None:
    extractive = SimpleNamespace(protocol="domainrag", attributes={"question_type": "extractive"})
    structural = SimpleNamespace(protocol="domainrag", attributes={"question_type": "structural"})
    items = instance_conditions([extractive, structural], ["", "noise_4_first", "html"])
    assert [(i.attributes["question_type"], c) for i, c in items] == [
        ("extractive", ""), ("extractive", "noise_4_first"), ("structural", ""), ("structural", "html")]
