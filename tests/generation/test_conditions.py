"""Conditions: generic bundle transformations, the protocols' prompts (EnterpriseRAG byte-identical to build_messages,
the neutral reference-QA prompt) and condition declarations checked when made."""

from __future__ import annotations

import pytest

from core.protocols import Condition, Protocol, get_protocol
from core.protocols.enterprise_rag.prompt import build_messages
from core.protocols.prompting import (
    SOURCE_POLICIES,
    DocumentView,
    InstanceView,
    condition_bundle,
    fit_documents,
)
from core.store.models import Constraint, Document, Instance

ENTERPRISE = get_protocol("enterprise_rag")
REFERENCE = get_protocol("reference_qa")


def doc(uid: str, role: str, position: int, content_type: str = "text", text: str = "", **variant) -> DocumentView:
    return DocumentView(doc_uid=uid, position=position, title=f"T {uid}", text=text or f"Body of {uid}.", role=role,
                        content_type=content_type, variant=variant)


BUNDLE = [doc("n1", "noise", 0), doc("s1", "supporting", 1, kind="gold"), doc("n2", "noise", 2),
          doc("c1", "counterfactual", 3, kind="corrupted", severity="subtle"), doc("n3", "noise", 4),
          doc("h1", "supporting", 5, "html", "<p>Fee</p><script>x()</script><table><tr><th>a</th><th>b</th></tr>"
                                            "<tr><td>1</td><td>2</td></tr></table>")]


def uids(settings: dict, order: str = "stored", seed: int = 0) -> list[str]:
    return [d.doc_uid for d in condition_bundle(BUNDLE, settings, order, seed)[0]]


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        pytest.param({}, ["n1", "s1", "n2", "c1", "n3", "h1"], id="as-stored"),
        pytest.param({"documents": "none"}, [], id="closed-book"),
        pytest.param({"include": {"role": "supporting"}}, ["s1", "h1"], id="include-role"),
        pytest.param({"include": {"role": ["supporting", "counterfactual"]}}, ["s1", "c1", "h1"], id="include-roles"),
        pytest.param({"exclude": {"kind": "corrupted"}}, ["n1", "s1", "n2", "n3", "h1"], id="exclude-variant-key"),
        pytest.param({"include": {"kind": "corrupted", "severity": "subtle"}}, ["c1"], id="include-two-variant-keys"),
        pytest.param({"include": {"content_type": "html"}}, ["h1"], id="include-content-type"),
        pytest.param({"noise": 0}, ["s1", "c1", "h1"], id="no-noise"),
        pytest.param({"noise": 2}, ["n1", "s1", "n2", "c1", "h1"], id="two-noise-kept-first"),
        pytest.param({"order": "support_first"}, ["s1", "h1", "n1", "n2", "c1", "n3"], id="gold-first"),
        pytest.param({"order": "support_last"}, ["n1", "n2", "c1", "n3", "s1", "h1"], id="gold-last"),
        pytest.param({"order": "support_middle"}, ["n1", "n2", "s1", "h1", "c1", "n3"], id="gold-middle"),
        pytest.param({"noise": 1, "order": "support_first"}, ["s1", "h1", "n1", "c1"], id="noise-and-gold-first"),
    ],
)
def test_bundle_transformations(settings, expected):
    assert uids(settings) == expected


def test_shuffle_uses_the_seed_and_a_condition_order_overrides_the_run_order():
    assert uids({}, "shuffle", 5) == uids({}, "shuffle", 5)
    assert len({tuple(uids({}, "shuffle", seed)) for seed in range(6)}) > 1
    assert uids({"order": "stored"}, "shuffle", 5) == uids({})
    assert condition_bundle(BUNDLE, {"order": "support_last"}, "shuffle", 3)[1]["order"] == "support_last"


def test_html_as_text_converts_only_html_documents_and_records_them():
    bundle, meta = condition_bundle(BUNDLE, {"html": "text"})
    html = bundle[-1]
    assert html.content_type == "text" and "x()" not in html.text and "| a | b |\n| --- | --- |\n| 1 | 2 |" in html.text
    assert bundle[:-1] == BUNDLE[:-1] and meta["html_as_text"] == ["h1"]
    assert condition_bundle(BUNDLE, {})[0][-1].text == BUNDLE[-1].text


def test_dropped_documents_are_recorded():
    _, meta = condition_bundle(BUNDLE, {"noise": 1})
    assert meta == {"order": "stored", "seed": 0, "condition_dropped": ["n2", "n3"]}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        pytest.param({"documnets": "none"}, "unknown condition setting", id="typo-key"),
        pytest.param({"documents": "some"}, "bad value for condition setting.*documents", id="bad-documents"),
        pytest.param({"order": "gold_first"}, "bad value.*order", id="bad-order"),
        pytest.param({"noise": -1}, "bad value.*noise", id="negative-noise"),
        pytest.param({"policy": "trust_me"}, "bad value.*policy", id="bad-policy"),
        pytest.param({"html": "markdown"}, "bad value.*html", id="bad-html"),
    ],
)
def test_bad_condition_settings_fail_when_declared(settings, message):
    with pytest.raises(ValueError, match=message):
        Condition("x", "bad", settings)


def test_a_protocol_needs_a_default_condition_and_unique_names():
    with pytest.raises(ValueError, match="default condition"):
        Protocol("p", "P", {}, (Condition("a", "a"),), ())
    with pytest.raises(ValueError, match="unique"):
        Protocol("p", "P", {}, (Condition("", "d"), Condition("", "again")), ())


def test_unknown_condition_lists_the_known_ones():
    with pytest.raises(KeyError, match=r"known: \(default\), closed_book, html_as_text"):
        REFERENCE.prompt(InstanceView(query="q"), BUNDLE, "open_book")


def test_reference_qa_declares_the_required_conditions():
    assert {"", "closed_book", "html_as_text"} <= set(REFERENCE.condition_names())


ORM_DOCS = [Document(instance_id=1, position=p, doc_uid=f"d{p}", title=f"Title {p}", text=f"Body {p}.", role=r)
            for p, r in enumerate(["noise", "supporting", "noise", "conflicting", "noise"])]
ORM_CONSTRAINTS = [Constraint(instance_id=1, position=p, cid=f"c{p}", text=t, category="output",
                              sub_dimension="format", judge_method="rule", checker_id="x")
                   for p, t in [(1, "Second rule."), (0, "First rule.")]]


@pytest.mark.parametrize("order", ["stored", "shuffle", "support_first", "support_middle", "support_last"])
def test_enterprise_protocol_prompt_is_build_messages_byte_for_byte(order):
    instance = Instance(id=1, uid="u", domain_id=1, query="What is the interval?", mode="noisy")
    expected = build_messages(instance, ORM_CONSTRAINTS, ORM_DOCS, order=order, seed=7)
    view = InstanceView(query=instance.query, constraints=tuple(ORM_CONSTRAINTS))
    messages, meta = ENTERPRISE.prompt(view, ORM_DOCS, "", order, 7)
    assert [m.model_dump() for m in messages] == [m.model_dump() for m in expected[0]]
    assert list(meta.items()) == list(expected[1].items())


def test_enterprise_policy_condition_adds_one_system_line():
    view = InstanceView(query="q", constraints=tuple(ORM_CONSTRAINTS))
    plain = ENTERPRISE.prompt(view, ORM_DOCS)[0]
    policy = ENTERPRISE.render_prompt(view, ORM_DOCS, Condition("p", "p", {"policy": "documents"}), {})[0]
    assert policy[0].content == plain[0].content + "\n\n" + SOURCE_POLICIES["documents"]
    assert policy[1] == plain[1]


OPEN = InstanceView(query="Who wrote it?", protocol="reference_qa", reference={"answer_type": "short"})
MCQ = InstanceView(query="Capital of France?", protocol="reference_qa",
                   reference={"answer_type": "mcq", "choices": {"B": "Rome", "A": "Paris"}, "answer_key": "A"})


@pytest.mark.parametrize(
    ("instance", "condition", "system_has", "system_lacks", "user_has"),
    [
        pytest.param(OPEN, "", ["using the documents", "documents do not contain the answer", "short"],
                     ["letter", "do not know"], ["Documents:\n\n[doc 1] T n1\nBody of n1.", "Question: Who wrote it?"],
                     id="open-with-documents"),
        pytest.param(OPEN, "closed_book", ["Answer the question.", "say that you do not know"],
                     ["documents"], ["Question: Who wrote it?"], id="open-closed-book"),
        pytest.param(MCQ, "", ["letter of the correct option only (A, B)"], ["do not contain", "do not know"],
                     ["Question: Capital of France?\n\nOptions:\nA. Paris\nB. Rome"], id="mcq-letters-in-order"),
        pytest.param(OPEN, "prior_knowledge", [SOURCE_POLICIES["prior_knowledge"]], [], ["[doc 6]"],
                     id="policy-line"),
        pytest.param(OPEN, "html_as_text", [], [], ["| a | b |"], id="html-as-text"),
    ],
)
def test_reference_prompt(instance, condition, system_has, system_lacks, user_has):
    messages, meta = REFERENCE.prompt(instance, BUNDLE, condition)
    system, user = messages[0].content, messages[-1].content
    assert all(text in system for text in system_has), system
    assert not any(text in system for text in system_lacks), system
    assert all(text in user for text in user_has), user
    assert meta.get("condition", "") == condition


def test_reference_prompt_never_reveals_an_unanswerable_question():
    unanswerable = InstanceView(query="Who wrote it?", reference={"answer_type": "unanswerable"})
    assert REFERENCE.prompt(unanswerable, BUNDLE)[0] == REFERENCE.prompt(OPEN, BUNDLE)[0]


def test_reference_prompt_untitled_documents_history_and_date():
    untitled = [DocumentView(doc_uid="d", position=0, title="", text="Body.", role="supporting")]
    view = InstanceView(query="And the year after?", reference={"answer_type": "short"},
                        attributes={"date": "2023", "history": [{"role": "user", "content": "Score in 2021?"},
                                                                {"role": "assistant", "content": "632"}]})
    messages, _ = REFERENCE.prompt(view, untitled)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1].content == "Score in 2021?" and messages[2].content == "632"
    assert messages[-1].content == "Documents:\n\n[doc 1]\nBody.\n\nQuestion: And the year after?"
    assert "asked on 2023" in messages[0].content


def test_the_extractive_baseline_reads_reference_prompts():
    from core.generation.baselines import extractive

    messages, _ = REFERENCE.prompt(OPEN, [doc("a", "supporting", 0, text="Tolkien wrote it in 1954.")])
    assert extractive(messages[-1].content.replace("Who wrote it?", "Who wrote it in 1954?")).endswith("[doc 1]")


@pytest.mark.parametrize(
    ("sizes", "limit", "kept"),
    [
        pytest.param([10, 10, 10], 100, 3, id="all-fit"),
        pytest.param([40, 40, 40], 100, 2, id="last-dropped"),
        pytest.param([40, 70, 1], 100, 1, id="drops-from-the-end-even-if-a-later-one-is-small"),
        pytest.param([120, 1], 100, None, id="first-alone-too-big"),
    ],
)
def test_fit_documents_drops_whole_documents_from_the_end(sizes, limit, kept):
    documents = [doc(f"d{i}", "supporting", i, text="x" * size) for i, size in enumerate(sizes)]
    fitted = fit_documents(documents, lambda docs: docs, lambda docs: sum(len(d.text) for d in docs), limit)
    assert (fitted[0] if fitted else None) == kept
    if fitted:
        assert [d.doc_uid for d in fitted[1]] == [d.doc_uid for d in documents[:kept]]


def test_instruction_following_sends_the_prompt_verbatim():
    constraints = (Constraint(instance_id=1, position=0, cid="c1", text="x", category="output",
                              sub_dimension="format", judge_method="rule", checker_id="ifeval:x"),)
    prompt = "Write a haiku about rain.  Do not use commas.\n"
    messages, meta = get_protocol("instruction_following").prompt(InstanceView(query=prompt, constraints=constraints),
                                                                  [])
    assert [(m.role, m.content) for m in messages] == [("user", prompt)]
    assert meta == {"order": "stored", "seed": 0, "doc_order": [], "doc_roles": [], "constraint_ids": ["c1"]}
