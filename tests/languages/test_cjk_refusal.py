"""Refusal detection in Chinese and Japanese: a written table of refusals and answers (caveats included), the
baselines' refusals, and LIT-RAGBench's reference answers (abstention items refuse, the others do not)."""

from __future__ import annotations

import pytest

from core.generation.baselines import REFUSALS
from core.scoring.judges.heuristic import detect_refusal
from core.scoring.judges.text import content_words, is_meta, sentences
from tests.languages.conftest import is_abstention

REFUSALS_TABLE = [
    pytest.param("根据提供的文档，无法回答这个问题。", "无法回答", id="zh-cannot-answer"),
    pytest.param("文档中没有提及该设备的保修期。", "文档中没有提及", id="zh-documents-do-not-mention"),
    pytest.param("根据提供的资料无法确定2024年的预算金额。", "无法确定", id="zh-cannot-determine-with-figure"),
    pytest.param("没有相关信息。", "没有相关信息", id="zh-no-relevant-information"),
    pytest.param("抱歉，提供的材料中并未说明退货政策。", "并未说明", id="zh-material-does-not-state"),
    pytest.param("现有资料不足以回答您的问题：文件里没有关于价格的信息。", "资料不足", id="zh-insufficient"),
    pytest.param("我无法从文档中找到答案。", "无法从文档中找到", id="zh-cannot-find-in-documents"),
    pytest.param("很抱歉，知识库中没有足够的信息来确定答案。", "没有足够的信息", id="zh-not-enough-information"),
    pytest.param("文档只介绍了产品的保修政策。关于价格，文档中没有提及。", "文档中没有提及",
                 id="zh-meta-sentence-then-refusal"),
    pytest.param("回答できません。", "回答できません", id="ja-cannot-answer"),
    pytest.param("提供された文書には記載されていません。", "記載されていません", id="ja-not-stated"),
    pytest.param("申し訳ありませんが、その情報がありません。", "情報がありません", id="ja-no-information"),
    pytest.param("提供された文書からは分かりません。", "分かりません", id="ja-cannot-tell-from-documents"),
    pytest.param("不明です。", "不明です", id="ja-unknown"),
    pytest.param("与えられた情報からは、オリーブ油の原産地がどこかは判断できません。", "判断できません",
                 id="ja-cannot-judge-from-given-information"),
    pytest.param("資料には価格についての記載がありません。ご了承ください。", "記載がありません",
                 id="ja-refusal-with-polite-closing"),
    pytest.param("申し訳ございませんが、ご質問にお答えすることはできません。参照資料に該当する情報が見当たりません。",
                 "お答えすることはできません", id="ja-polite-two-sentences"),
    pytest.param("資料は2023年の売上についてのみ説明しています。2024年の数値は記載されていません。",
                 "記載されていません", id="ja-meta-sentence-then-refusal"),
]

ANSWERS_TABLE = [
    pytest.param("根据文件，X200 泵的保修期为自安装之日起 24 个月。保修范围包括密封件和电机组件。", id="zh-answer"),
    pytest.param("该产品不能提供退款服务，但可以在30天内换货。", id="zh-cannot-in-the-world-not-in-the-documents"),
    pytest.param("截止日期是2024年3月31日。文档中没有提及延期的条件。", id="zh-answer-with-caveat"),
    pytest.param("没有数据表明该药物会引起嗜睡，建议按说明书服用。每日两次，每次一片。", id="zh-no-data-shows"),
    pytest.param("如果电力中断，系统会自动切换到备用电源。备用电源可以维持4小时。", id="zh-interruption-is-content"),
    pytest.param("会議室A325でオンライン会議を行うことはできません。会議室A325では電子機器の使用が禁止されています。",
                 id="ja-cannot-in-the-world"),
    pytest.param("締め切りは3月31日です。申請はオンラインで行い、担当部署が5営業日以内に審査します。"
                 "ただし、延長の条件は記載されていません。", id="ja-answer-with-caveat"),
    pytest.param("価格は税込み12,000円です。送料は含まれていません。", id="ja-not-included-is-content"),
    pytest.param("ラジコンカーは公園内への持ち込みが禁止されており、使用できません。", id="ja-cannot-use"),
    pytest.param("接続が途切れた場合は、ルーターを再起動してください。再起動後、5分ほどで通信が回復します。",
                 id="ja-connection-drops-is-content"),
    pytest.param("X200ポンプの保証期間は設置日から24か月です。保証はシールとモーターを対象とします。", id="ja-answer"),
]


@pytest.mark.parametrize(("text", "cue"), REFUSALS_TABLE)
def test_cjk_refusals_are_refusals(text: str, cue: str) -> None:
    refused, phrases = detect_refusal(text)
    assert refused, phrases
    assert any(cue in p for p in phrases), phrases


@pytest.mark.parametrize("text", ANSWERS_TABLE)
def test_cjk_answers_are_not_refusals(text: str) -> None:
    assert detect_refusal(text)[0] is False, detect_refusal(text)


@pytest.mark.parametrize("language", ["en", "zh", "ja"])
def test_baseline_refusals_are_detected(language: str) -> None:
    assert detect_refusal(REFUSALS[language])[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("你好。再见！真的吗?好的。", ["你好。", "再见！", "真的吗?", "好的。"], id="zh-no-spaces"),
        pytest.param("「これはペンです。」と彼は言った。次の文。", ["「これはペンです。」と彼は言った。", "次の文。"],
                     id="ja-quote-inside-sentence"),
        pytest.param("你好。 Hello there. Bye.", ["你好。", "Hello there.", "Bye."], id="mixed"),
    ],
)
def test_cjk_sentences(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


@pytest.mark.parametrize(
    ("text", "meta"),
    [
        pytest.param("文档只介绍了产品的保修政策。", True, id="zh-only-describes"),
        pytest.param("資料は2023年の売上についてのみ説明しています。", True, id="ja-only-about"),
        pytest.param("文档说明了保修期为24个月。", False, id="zh-documents-state-an-answer"),
    ],
)
def test_cjk_meta(text: str, meta: bool) -> None:
    assert is_meta(text) is meta


def test_cjk_content_words_measure_a_claim() -> None:
    assert len(content_words("ご了承ください。")) < 3 <= len(content_words("保証期間は設置日から24か月です。"))


@pytest.mark.parametrize("language", ["ja", "en"])
def test_lit_ragbench_abstention_references_are_refusals(lit_rows, language: str) -> None:
    rows = [r for r in lit_rows(language) if is_abstention(r)]
    missed = [r["answer"][:120] for r in rows if not detect_refusal(r["answer"])[0]]
    assert len(rows) == 60
    assert missed == [], f"{language}: {len(rows) - len(missed)}/{len(rows)} abstention references detected"


@pytest.mark.parametrize("language", ["ja", "en"])
def test_lit_ragbench_other_references_are_not_refusals(lit_rows, language: str) -> None:
    rows = [r for r in lit_rows(language) if not is_abstention(r)]
    flagged = [(r["qa_type"], r["answer"][:120]) for r in rows if detect_refusal(r["answer"])[0]]
    assert len(rows) == 54
    assert flagged == [], f"{language}: {len(flagged)}/{len(rows)} answers taken for refusals"
