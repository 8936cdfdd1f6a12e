"""Instruction following (IFEval-style): a prompt with checkable instructions, no documents, no reference answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.protocols import register
from core.protocols.base import Condition, Prompt, Protocol, needs
from core.protocols.prompting import InstanceView, constraint_meta, query_messages


def instruction_prompt(instance: InstanceView, documents: Sequence[Any], condition: Condition) -> Prompt:
    """The prompt verbatim as the user message, no system message (IFEval's setting); constraint ids in the meta."""
    return query_messages(instance, documents), constraint_meta(instance.constraints)


INSTRUCTION_FOLLOWING = register(Protocol(
    name="instruction_following",
    title="Instruction following",
    description="Prompts whose instructions are verified by rule checkers (IFEval); strict and loose accuracy.",
    required={"constraints": needs("constraints", "an instruction_following instance needs at least one constraint")},
    conditions=(Condition("", "the prompt alone"),),
    metrics=("constraint",),
    aggregates=("loose_ias", "strict_ias"),
    headline=("strict_ias",),
    render=instruction_prompt,
))
