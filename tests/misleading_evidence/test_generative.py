"""Issue 43.3: where the rules run out a generator writes the misleading evidence, and every item (rule-made or
generated) passes automatic checks before it is built. The generator and the judge are scripted models on loopback
fake servers reached through the real openai SDK; `gauntlet misleading-evidence build --llm --generate --judge` over
the 500 shared HotpotQA items."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.protocols.misleading_evidence.builder import Edit, Evidence, NoSafeEdit, Plan, title_base
from core.protocols.misleading_evidence.builder_generative import CHECKS, check_plan, evidence_of, plan_from_rewrite
from core.protocols.misleading_evidence.builder_plans import build_stress
from core.store.schema import InstanceSpec
from core.testing.fake_server import ScriptRule
from tests.factories import scripted_models
from tests.misleading_evidence.conftest import DATA, SLICES, source_specs

BAD_EVERY = 40  # every 40th generated item the scripted writer leaves one mention of the gold: dropped by the checks


def _wrong(spec: InstanceSpec, gold: str, evidence: str) -> str | None:
    if gold.lower() in ("yes", "no"):
        return "no" if gold.lower() == "yes" else "yes"
    if re.search(r"\d", gold):
        return re.sub(r"\d+", lambda m: str(int(m.group()) + 3), gold, count=1)
    titles = sorted({title_base(d.title) for d in spec.documents if d.role == "noise"})
    return next((t for t in titles if t and gold not in t and t not in evidence and t not in spec.query), None)


def writer_reply(spec: InstanceSpec, bad: bool = False) -> dict | None:
    """What the scripted writer answers for one item: every mention of the gold swapped for a wrong answer (a yes/no
    item gets a closing sentence saying the opposite)."""
    gold = spec.reference.answers[0].text.strip()
    try:
        sentences = evidence_of(spec).sentences
    except NoSafeEdit:
        return None
    wrong = _wrong(spec, gold, " ".join(sentences))
    if wrong is None:
        return None
    if gold.lower() in ("yes", "no"):
        last = len(sentences) - 1
        rewrites = {str(last): f"{sentences[last]} So, to the question asked, the answer is {wrong}."}
    else:
        mentions = [i for i, s in enumerate(sentences) if gold in s]
        rewrites = {str(i): sentences[i].replace(gold, wrong) for i in (mentions[:1] if bad else mentions)}
    return {"wrong_answer": wrong, "answer_type": "entity", "sentences": rewrites}


def scripts(specs: list[InstanceSpec]) -> tuple[dict[str, list[ScriptRule]], set[str]]:
    """The writer's rules (one per item, matched on its question and gold) and the judge's; the ids scripted bad."""
    rules, bad_ids = [], set()
    for n, spec in enumerate(specs):
        reply = writer_reply(spec, bad := n % BAD_EVERY == 7)
        if reply is None:
            continue
        if bad and reply != writer_reply(spec):  # the gold said more than once: one mention left
            bad_ids.add(spec.id)
        head = f"Question: {spec.query}\nCorrect answer: {spec.reference.answers[0].text.strip()}\n\nEvidence"
        rules.append(ScriptRule(match=re.escape(head), reply=json.dumps(reply)))
    judge = [ScriptRule(match="Designated wrong answer", reply=json.dumps(
        {"supports_wrong": True, "same_type": True, "reason": "scripted judge: the edit states the wrong answer"}))]
    return {"writer": rules, "checker": judge}, bad_ids


def test_generated_build_covers_ninety_percent_of_hotpotqa_and_every_item_passes(tmp_path, engine):
    specs = source_specs("hotpotqa")
    script, bad_ids = scripts(specs)
    out = tmp_path / "stress.jsonl"
    fmt, relative = SLICES["hotpotqa"]
    with scripted_models(engine, script, max_output_tokens=4096):
        result = CliRunner().invoke(app, ["misleading-evidence", "build", str(DATA / relative), "--format", fmt,
                                          "--out", str(out), "--llm", "writer", "--generate", "--judge", "checker"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    metas = [r["metadata"]["rag_stress"] for r in rows]
    assert summary["items"] == 500 and len(rows) == summary["built"] >= 450, summary["built"]
    assert all(set(m["checks"]) == set(CHECKS) and all(v["passed"] for v in m["checks"].values()) for m in metas)
    assert all(m["gold_mentions_left"] == 0 for m in metas)
    generated = [m for m in metas if m.get("generated")]
    assert len(generated) == summary["generated"] >= 150
    assert all(m["method"] == "llm:writer" for m in generated)
    assert not any(m.get("generated") for m in metas if m["method"] == "rule")
    judged = {v["by"] for m in metas for v in m["checks"].values()}
    assert judged == {"rule", "judge:checker"}
    checks = summary["checks"]
    assert set(checks) == set(CHECKS)
    assert checks["gold_not_elsewhere"]["failed"] >= 1 and summary["regenerated"] >= 1  # the scripted bad replies
    built_ids = {m["source_id"] for m in metas}
    rule_built = [m for m in metas if not m.get("generated")]
    assert bad_ids and not (bad_ids - {m["source_id"] for m in rule_built}) & built_ids
    print(f"built {len(rows)} of 500: {len(rule_built)} by rule, {len(generated)} generated; checks {checks}")


def _spec_plan(sentences: tuple[str, ...], answer: int, before: str, after: str, gold: str) -> tuple[InstanceSpec, Plan]:
    spec = InstanceSpec.model_validate({
        "id": "x", "domain": "d", "query": "Where was he born?", "documents": [
            {"doc_id": "p", "title": "P", "text": " ".join(sentences), "role": "supporting"}],
        "reference": {"answers": [{"text": gold}], "answer_type": "short"}})
    sentence = sentences[answer]
    return spec, Plan(Evidence(sentences, answer), Edit(sentence.index(before), before, after), after, (after,),
                      None, "place")


@pytest.mark.parametrize(("name", "sentences", "before", "after", "gold", "failing"), [
    ("clean swap", ("He was born in Paris.", "He lived in Rome."), "Paris", "Lyon", "Paris", []),
    ("gold said again elsewhere", ("He was born in Paris.", "Paris was home."), "Paris", "Lyon", "Paris",
     ["gold_not_elsewhere"]),
    ("edit misses the gold", ("He was born in Paris near Paris.",), "born", "raised", "Paris",
     ["drops_gold", "gold_not_elsewhere"]),
    ("year for a place", ("He was born in 1950.",), "1950", "Lyon", "1950", ["same_type"]),
])
def test_checks_by_rule(name, sentences, before, after, gold, failing):
    spec, plan = _spec_plan(sentences, 0, before, after, gold)
    verdicts = check_plan(spec, plan)
    assert sorted(n for n, v in verdicts.items() if not v.passed) == sorted(failing), name
    assert all(v.reason for v in verdicts.values())


def test_generated_type_without_a_judge_fails_rather_than_passes():
    spec, plan = _spec_plan(("He was born in Paris.",), 0, "Paris", "Lyon", "Paris")
    verdicts = check_plan(spec, plan, generated=True)
    assert not verdicts["same_type"].passed and "no judge" in verdicts["same_type"].reason


@pytest.mark.parametrize(("name", "reply", "reason"), [
    ("no wrong answer", {"sentences": {"0": "x"}}, "no wrong answer"),
    ("unknown sentence", {"wrong_answer": "Lyon", "sentences": {"7": "x"}}, "does not exist"),
    ("nothing changed", {"wrong_answer": "Lyon", "sentences": {"0": "He was born in Paris."}}, "changed nothing"),
])
def test_unusable_rewrites_are_refused(name, reply, reason):
    with pytest.raises(NoSafeEdit, match=reason):
        plan_from_rewrite(Evidence(("He was born in Paris.", "He lived in Rome."), 0), reply, "llm:x")


def test_rewrite_of_two_sentences_is_one_edited_unit():
    evidence = Evidence(("A.", "He was born in Paris.", "B.", "Paris was home.", "C."), 0)
    plan = plan_from_rewrite(evidence, {"wrong_answer": "Lyon", "sentences": {
        "1": "He was born in Lyon.", "3": "Lyon was home."}}, "llm:x")
    assert plan.misleading.text() == "A. He was born in Lyon. B. Lyon was home. C."
    assert plan.evidence.text() == evidence.text() and plan.notes["sentences_rewritten"] == 2


def test_offline_build_without_checks_is_unchanged_in_shape():
    result = build_stress(source_specs("hotpotqa")[:40], seed=0)
    assert result.generated == 0 and result.checks == {}
    assert all(i.metadata["rag_stress"]["gold_mentions_left"] == 0 for i in result.instances)
