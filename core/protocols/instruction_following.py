"""Instruction following (IFEval-style): a prompt with checkable instructions, no documents, no reference answer."""

from __future__ import annotations

from core.protocols import register
from core.protocols.base import Condition, Protocol, needs

INSTRUCTION_FOLLOWING = register(Protocol(
    name="instruction_following",
    title="Instruction following",
    description="Prompts whose instructions are verified by rule checkers (IFEval); strict and loose accuracy.",
    required={"constraints": needs("constraints", "an instruction_following instance needs at least one constraint")},
    conditions=(Condition("", "the prompt alone"),),
    metrics=("constraint",),
    aggregates=("loose_ias", "strict_ias"),
    views=("leaderboard",),
))
