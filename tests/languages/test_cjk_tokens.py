"""Token counts for estimates: a Chinese / Japanese / Korean character is about one token, other text about four
characters per token; the run estimate counts with it."""

from __future__ import annotations

import pytest
from sqlmodel import Session

from core.generation import run_estimates, run_prompts, runs
from core.generation.llm import estimate_tokens
from core.generation.tokens import count_tokens
from tests.factories import add_model, make_instance


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        pytest.param("", 1, id="empty-is-one"),
        pytest.param("abc", 1, id="short-is-one"),
        pytest.param("The turbine bearing interval is 6000 hours.", 10, id="english-four-chars"),
        pytest.param("风机主轴承的维护周期为6000运行小时。", 11 + 4 + 1 + 1, id="zh-one-per-character"),
        pytest.param("保守間隔は6000運転時間です。", 5 + 6 + 1 + 1, id="ja-kana-and-kanji"),
        pytest.param("유지 보수", 4, id="ko-hangul"),
        pytest.param("X200 泵", 1 + 1, id="mixed"),
    ],
)
def test_count_tokens(text: str, tokens: int) -> None:
    assert count_tokens(text) == tokens


@pytest.mark.parametrize(
    "text",
    [pytest.param("The turbine bearing interval is 6000 hours. " * 7, id="prose"), pytest.param("x" * 4001, id="long")],
)
def test_non_cjk_text_keeps_the_four_character_rule(text: str) -> None:
    assert count_tokens(text) == estimate_tokens(text)


def test_run_estimate_counts_cjk_characters(engine) -> None:
    with Session(engine) as session:
        instance = make_instance(session, uid="zh-1", query="风机主轴承的维护周期是多久？",
                                 support="风机主轴承的维护周期为6000运行小时。" * 20, noise=["食堂每周一供应汤。" * 20])
        session.commit()
        instance_id = instance.id
    add_model(engine, "gpt-x")
    estimate = run_estimates.estimate_options(engine, runs.RunOptions(models=["gpt-x"]))
    with Session(engine) as session:
        messages = run_prompts.instance_prompt(session, instance_id, "stored", 0)[0]
    assert estimate.calls == 1
    assert estimate.input_tokens == sum(count_tokens(m.content) for m in messages)
    assert estimate.input_tokens > 2 * sum(estimate_tokens(m.content) for m in messages)
