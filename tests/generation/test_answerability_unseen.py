"""The prompt never tells a model which items are unanswerable (issue 44): in every protocol that asks with the
reference-answer prompt, an unanswerable item reads the same messages as an answerable one of the protocol's answer
form (short for reference QA and injection; long for long context, citations and conversations), under every one of
the protocol's conditions. Paper-mode prompts pinned to the authors' code are untouched (the golden reference prompts
and tests/lit_ragbench/test_authors_run.py keep passing)."""

from __future__ import annotations

import pytest

from core.protocols import get_protocol
from core.protocols.prompting import REFERENCE_LINES, DocumentView, InstanceView

DOCS = [DocumentView(doc_uid=f"d{i}", position=i, title=f"Doc {i}", text=f"Room {i} opens with code K{i}.",
                     role="supporting", variant={"setting": "chunk"}) for i in range(3)]
ATTRIBUTES = {"conversation": {"aspects": ["turn:2"], "categories": ["answerable"],
                               "history": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hi."}]}}

CASES = [  # protocol, the answer type its answerable items carry, whether they are asked for a short answer
    pytest.param("reference_qa", "short", True, id="reference-qa-short"),
    pytest.param("injection", "short", True, id="injection-short"),
    pytest.param("long_context", "long", False, id="long-context-long"),
    pytest.param("citation", "long", False, id="citation-long"),
    pytest.param("conversation", "long", False, id="conversation-long"),
]


def _messages(protocol: str, condition: str, reference: dict) -> list[tuple[str, str]]:
    view = InstanceView(query="Which code opens room 9?", protocol=protocol, language="en", reference=reference,
                        attributes=ATTRIBUTES.get(protocol, {}))
    messages, _ = get_protocol(protocol).prompt(view, DOCS, condition, seed=7)
    return [(m.role, m.content) for m in messages]


@pytest.mark.parametrize(("protocol", "answer_type", "short"), CASES)
def test_an_unanswerable_item_reads_the_same_prompt(protocol: str, answer_type: str, short: bool) -> None:
    answerable = {"answer_type": answer_type, "answers": [{"text": "K9"}]}
    for condition in get_protocol(protocol).condition_names():
        asked = _messages(protocol, condition, answerable)
        assert _messages(protocol, condition, {"answer_type": "unanswerable"}) == asked, condition
        assert (REFERENCE_LINES["short"] in asked[0][1]) is short, condition
