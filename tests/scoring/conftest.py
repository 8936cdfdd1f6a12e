"""Fixtures for reference_qa scoring: one instance per answer type (short, multi, mcq, unanswerable, long) in English,
Chinese and Japanese, each with a gold response and a wrong one, written for these tests."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from core.generation.baselines import REFUSAL_TEXT
from core.store.models import Instance, Response
from core.store.schema import ReferenceSpec
from tests.judges.conftest import seed_run


@dataclass(frozen=True)
class Case:
    """One reference_qa instance with a gold response (equal to its gold answer) and a wrong-answer response."""

    answer_type: str
    language: str
    query: str
    reference: dict
    gold: str
    wrong: str

    @property
    def uid(self) -> str:
        return f"{self.language}-{self.answer_type}"


MCQ_CHOICES = {"A": "2小时", "B": "4小时内", "C": "8小时内", "D": "12小时内", "E": "24小时内"}
CASES: list[Case] = [
    Case("short", "en", "Between Harvey Pekar and Denise Levertov, who was born earlier?",
         {"answer_type": "short", "answers": [{"text": "Denise Levertov", "aliases": ["Levertov"]}],
          "wrong_answers": ["Harvey Pekar"]}, "Denise Levertov", "Harvey Pekar"),
    Case("multi", "en", "Which two cities host the agency's offices?",
         {"answer_type": "multi", "answers": [{"text": "Lyon"}, {"text": "Porto"}], "wrong_answers": ["Madrid"]},
         "Lyon and Porto", "Madrid and Berlin"),
    Case("mcq", "en", "Which city is the capital of Italy?",
         {"answer_type": "mcq", "choices": {"A": "Paris", "B": "London", "C": "Rome", "D": "Madrid"}, "answer_key": "C"},
         "C", "B"),
    Case("unanswerable", "en", "What is the penalty for filing form Q7 late?",
         {"answer_type": "unanswerable"}, "I cannot find the answer in the provided documents.",
         "The penalty is 50 EUR per month of delay."),
    Case("long", "en", "What are the rules for night shifts?",
         {"answer_type": "long", "answers": [{"text": "Night shifts are capped at four per week; a fifth needs the works "
                                                      "council's approval and is paid at 150 percent."}],
          "reasoning": "Section 4.2 of the agreement."},
         "Night shifts are capped at four per week; a fifth needs the works council's approval and is paid at 150 "
         "percent.", "Employees may swap shifts freely without any approval."),
    Case("short", "zh", "北京大学成立于哪一年？",
         {"answer_type": "short", "answers": [{"text": "1898年", "aliases": ["1898"]}], "wrong_answers": ["1912年"]},
         "1898年", "北京大学成立于1912年。"),
    Case("multi", "zh", "哪两座城市设有该机构的办事处？",
         {"answer_type": "multi", "answers": [{"text": "上海"}, {"text": "广州"}], "wrong_answers": ["深圳"]},
         "上海和广州", "深圳和北京"),
    Case("mcq", "zh", "经调查证实出现医院感染流行时，医院应报告当地卫生行政部门的时间是（　　）。",
         {"answer_type": "mcq", "choices": MCQ_CHOICES, "answer_key": "E"}, "E", "答案是B"),
    Case("unanswerable", "zh", "逾期提交Q7表格的罚款是多少？",
         {"answer_type": "unanswerable"}, "根据提供的文档，无法回答这个问题。", "罚款为每月500元。"),
    Case("long", "zh", "夜班有哪些规定？",
         {"answer_type": "long", "answers": [{"text": "夜班每周最多四次；第五次需要工会批准，并按百分之一百五十支付工资。"}]},
         "夜班每周最多四次；第五次需要工会批准，并按百分之一百五十支付工资。", "员工可以随时调换班次，无需任何审批。"),
    Case("short", "ja", "暁斎テクノロジーズの2024年の注目企業ランキングの順位は何位ですか？",
         {"answer_type": "short", "answers": [{"text": "29位"}], "wrong_answers": ["30位"]}, "29位", "30位です。"),
    Case("multi", "ja", "その機関の事務所がある二つの都市はどこですか？",
         {"answer_type": "multi", "answers": [{"text": "東京"}, {"text": "大阪"}], "wrong_answers": ["名古屋"]},
         "東京と大阪", "名古屋と福岡"),
    Case("mcq", "ja", "日本の首都はどこですか？",
         {"answer_type": "mcq", "choices": {"A": "大阪", "B": "東京", "C": "京都", "D": "札幌"}, "answer_key": "B"},
         "B", "正解はDです。"),
    Case("unanswerable", "ja", "Q7様式の提出が遅れた場合の罰金はいくらですか？",
         {"answer_type": "unanswerable"}, "提供された文書には、この質問に答える情報がありません。", "罰金は月5万円です。"),
    Case("long", "ja", "夜勤にはどのような規則がありますか？",
         {"answer_type": "long", "answers": [{"text": "夜勤は週4回までで、5回目には労使委員会の承認が必要で、"
                                                      "賃金は150パーセントになります。"}]},
         "夜勤は週4回までで、5回目には労使委員会の承認が必要で、賃金は150パーセントになります。",
         "シフトはいつでも自由に変更できます。"),
]
CASE_IDS = [c.uid for c in CASES]
ALWAYS_REFUSE = REFUSAL_TEXT
NATIVE_REFUSALS = {"en": "I cannot find the answer in the provided documents.",
                   "zh": "根据提供的文档，无法回答这个问题。",
                   "ja": "提供された文書には、この質問に答える情報がありません。"}


@dataclass
class RefWorld:
    """A reference_qa benchmark in a fresh DB: one run, instance ids by case uid, a response factory."""

    engine: Engine
    run_id: int
    model_ids: dict[str, int]
    instances: dict[str, int]
    responses: dict[int, tuple[str, str]] = field(default_factory=dict)

    def respond(self, model: str, uid: str, text: str, condition: str = "", status: str = "done") -> int:
        """Add a response of `model` to the instance `uid`."""
        with Session(self.engine) as s:
            r = Response(run_id=self.run_id, model_id=self.model_ids[model], instance_id=self.instances[uid],
                         condition=condition, status=status, text=text, latency_ms=5.0)
            s.add(r)
            s.commit()
            self.responses[r.id] = (model, uid)
            return r.id


@pytest.fixture
def ref_world(engine: Engine) -> RefWorld:
    """Every case as a reference_qa instance, three generator models and a judge model row, one run."""
    with Session(engine) as s:
        dom_id, model_ids, run_id = seed_run(s, "General", ("gold-model", "wrong-model", "refuser", "judge-x"), "ref")
        instances = {}
        for c in CASES:
            ReferenceSpec.model_validate(c.reference)
            inst = Instance(uid=c.uid, domain_id=dom_id, query=c.query, protocol="reference_qa", language=c.language,
                            reference=c.reference)
            s.add(inst)
            s.flush()
            instances[c.uid] = inst.id
        s.commit()
        return RefWorld(engine, run_id, model_ids, instances)
