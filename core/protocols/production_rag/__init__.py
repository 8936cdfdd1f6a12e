"""Production RAG: questions, retrieved documents and answers taken from a deployed system's traces (no reference).

Scored without a reference: faithfulness of the answer to the retrieved documents and coverage of their key claims,
the same judge metrics EnterpriseRAG uses; experts verify the instances and label the answers.
"""

from __future__ import annotations

from core.protocols import register
from core.protocols.base import Condition, Protocol
from core.protocols.reference_qa import reference_prompt

PRODUCTION_RAG = register(Protocol(
    name="production_rag",
    title="Production RAG (traces)",
    description="Questions, documents in retrieval order and the deployed answers, imported from OpenTelemetry, "
                "OpenInference, Langfuse or Phoenix traces; faithfulness and coverage without a reference.",
    required={},
    render=reference_prompt,
    conditions=(
        Condition("", "the documents as the deployed retriever returned them, in retrieval order"),
        Condition("closed_book", "no documents: the question alone", {"documents": "none"}),
    ),
    metrics=("faithfulness", "coverage"),
    headline=("faithfulness", "coverage"),
))
