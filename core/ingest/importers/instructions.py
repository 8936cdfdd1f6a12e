"""IFEval-style instruction lists (instruction_id_list + kwargs) as rule constraints of the checker registry."""

from __future__ import annotations

import json
from typing import Any

from core.ingest.importers.base import RecordError
from core.scoring.checkers import CHECKERS, build_checker, kwargs_errors
from core.store.schema import InstanceSpec

SUB_DIMENSION_OF_GROUP = {
    "keywords": "content",
    "detectable_content": "content",
    "language": "style",
    "change_case": "style",
    "length_constraints": "format",
    "detectable_format": "format",
    "combination": "ordering",
    "startend": "ordering",
    "punctuation": "negative",
}
SUB_DIMENSION_OF_ID = {"keywords:forbidden_words": "negative", "startend:quotation": "format",
                       "combination:two_responses": "format"}

# FollowRAG names the IFEval instructions its own way (FollowRAG/utils/instruction_following_eval/
# instructions_registry.py maps each name to the IFEval checker class); same kwargs as IFEval.
FOLLOWRAG_IDS = {
    "keywords_inclusion": "keywords:existence",
    "keywords_frequency": "keywords:frequency",
    "keywords_exclusion": "keywords:forbidden_words",
    "format_language": "language:response_language",
    "length_sentence": "length_constraints:number_sentences",
    "length_paragraph": "length_constraints:number_paragraphs",
    "length_words": "length_constraints:number_words",
    "position_first_word": "length_constraints:nth_paragraph_first_word",
    "structure_placeholder": "detectable_content:number_placeholders",
    "position_postscript": "detectable_content:postscript",
    "structure_bullets": "detectable_format:number_bullet_lists",
    "structure_highlights": "detectable_format:number_highlighted_sections",
    "structure_sections": "detectable_format:multiple_sections",
    "format_json": "detectable_format:json_format",
    "structure_title": "detectable_format:title",
    "format_repeat_question": "combination:repeat_prompt",
    "position_end_with": "startend:end_checker",
    "cases_capital_words": "change_case:capital_word_frequency",
    "cases_uppercase": "change_case:english_capital",
    "cases_lowercase": "change_case:english_lowercase",
    "format_no_commas": "punctuation:no_comma",
    "format_quotation": "startend:quotation",
}


def sub_dimension(checker_id: str) -> str:
    """The output sub-dimension an instruction checks (IFEval instructions are all output constraints)."""
    return SUB_DIMENSION_OF_ID.get(checker_id) or SUB_DIMENSION_OF_GROUP.get(checker_id.split(":")[0], "format")


def _problems(index: int, checker_id: str, kwargs: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (f"instruction_id_list[{index}]", message) if path == "checker_id"
        else (f"kwargs[{index}]" + path.removeprefix("checker_kwargs"), message)
        for path, message in kwargs_errors(checker_id, kwargs)
    ]


def judged_constraint(index: int, instruction_id: str, params: dict[str, Any]) -> dict[str, Any]:
    """An instruction no rule checker knows, left to the judge (as EnterpriseRAG's judged constraints are): the
    question states it, the criterion names it with its parameters."""
    named = f"'{instruction_id}'" + (f" with {json.dumps(params, ensure_ascii=False, sort_keys=True)}" if params else "")
    return {"id": f"c{index + 1}", "text": f"Follow the instruction {named} given with the question.",
            "category": "output", "sub_dimension": "format", "judge_method": "llm",
            "criterion": f"The response follows the instruction {named} as the question states it."}


def rule_constraints(
    ids: list[str], kwargs: list[dict[str, Any]], aliases: dict[str, str] | None = None, *, keep_unknown: bool = False
) -> tuple[list[dict], list[str]]:
    """One rule constraint per instruction the checker registry knows, kwargs kept as given, and the unknown ids.

    Bad kwargs raise; unknown ids raise too unless keep_unknown (they are then judged constraints, judged_constraint).
    """
    if len(ids) != len(kwargs):
        raise RecordError(("kwargs", f"expected {len(ids)} entries (one per instruction), got {len(kwargs)}"))
    problems, constraints, unknown = [], [], []
    for i, (instruction_id, params) in enumerate(zip(ids, kwargs, strict=True)):
        checker_id = (aliases or {}).get(instruction_id, instruction_id)
        if keep_unknown and checker_id not in CHECKERS:
            unknown.append(instruction_id)
            constraints.append(judged_constraint(i, instruction_id, params))
            continue
        if found := _problems(i, checker_id, params):
            problems += found
            continue
        constraints.append({
            "id": f"c{i + 1}", "text": build_checker(checker_id, params).describe(), "category": "output",
            "sub_dimension": sub_dimension(checker_id), "judge_method": "rule", "checker_id": checker_id,
            "checker_kwargs": params,
        })
    if problems:
        raise RecordError(*problems)
    return constraints, unknown


def instruction_lists(spec: InstanceSpec, aliases: dict[str, str] | None = None) -> dict[str, list]:
    """instruction_id_list and kwargs rebuilt from an instance's rule constraints (judged ones are in the residue)."""
    names: dict[str | None, str | None] = {checker: name for name, checker in (aliases or {}).items()}
    rules = [c for c in spec.constraints if c.judge_method == "rule"]
    return {
        "instruction_id_list": [names.get(c.checker_id, c.checker_id) for c in rules],
        "kwargs": [c.checker_kwargs for c in rules],
    }
