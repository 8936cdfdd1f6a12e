"""Run the rule checkers over IFEval inputs and responses; report accuracies and compare with reference verdicts."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from core.scoring.checkers import build_checker


class KeyVerdicts(BaseModel):
    """Strict and loose verdicts of one prompt's instructions."""

    key: int
    instruction_id_list: list[str]
    strict: list[bool]
    loose: list[bool]


class IFEvalReport(BaseModel):
    """Per-key verdicts plus prompt- and instruction-level accuracy, strict and loose."""

    verdicts: list[KeyVerdicts]
    prompt_strict: float
    instruction_strict: float
    prompt_loose: float
    instruction_loose: float


class Disagreement(BaseModel):
    """One instruction verdict that differs from the reference."""

    key: int
    index: int
    instruction_id: str
    mode: str
    ours: bool
    reference: bool


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _kwargs_for(kwargs: dict[str, Any], prompt: str, instruction_id: str) -> dict[str, Any]:
    if instruction_id == "combination:repeat_prompt" and kwargs.get("prompt_to_repeat") is None:
        return {**kwargs, "prompt_to_repeat": prompt}
    return kwargs


def evaluate_prompt(row: dict[str, Any], response: str) -> KeyVerdicts:
    """Strict and loose verdicts of every instruction of one IFEval input row."""
    strict, loose = [], []
    for instruction_id, kwargs in zip(row["instruction_id_list"], row["kwargs"], strict=True):
        checker = build_checker(instruction_id, _kwargs_for(kwargs, row["prompt"], instruction_id))
        strict.append(checker.check(response))
        loose.append(checker.check_loose(response))
    return KeyVerdicts(key=row["key"], instruction_id_list=row["instruction_id_list"], strict=strict, loose=loose)


def _accuracies(verdicts: list[KeyVerdicts], mode: str) -> tuple[float, float]:
    lists = [getattr(v, mode) for v in verdicts]
    prompt = sum(all(flags) for flags in lists) / len(lists)
    flat = [flag for flags in lists for flag in flags]
    return prompt, sum(flat) / len(flat)


def build_report(verdicts: list[KeyVerdicts]) -> IFEvalReport:
    """Aggregate per-key verdicts into an IFEvalReport."""
    prompt_strict, instruction_strict = _accuracies(verdicts, "strict")
    prompt_loose, instruction_loose = _accuracies(verdicts, "loose")
    return IFEvalReport(
        verdicts=verdicts,
        prompt_strict=prompt_strict,
        instruction_strict=instruction_strict,
        prompt_loose=prompt_loose,
        instruction_loose=instruction_loose,
    )


def run_ifeval(input_data: Path, responses: Path) -> IFEvalReport:
    """Check every IFEval prompt's response (matched by prompt text) against its instructions."""
    by_prompt = {row["prompt"]: row["response"] for row in _read_jsonl(Path(responses))}
    rows = _read_jsonl(Path(input_data))
    missing = [row["key"] for row in rows if row["prompt"] not in by_prompt]
    if missing:
        raise ValueError(f"no response for keys {missing[:10]} ({len(missing)} in all)")
    return build_report([evaluate_prompt(row, by_prompt[row["prompt"]]) for row in rows])


def write_verdicts(report: IFEvalReport, path: Path) -> None:
    """Write one JSON line per key: key, instruction_id_list, strict and loose verdict lists."""
    with Path(path).open("w", encoding="utf-8") as handle:
        for verdict in report.verdicts:
            handle.write(json.dumps(verdict.model_dump()) + "\n")


def _disagreements_of(ours: KeyVerdicts, reference: dict[str, Any]) -> list[Disagreement]:
    return [
        Disagreement(key=ours.key, index=i, instruction_id=iid, mode=mode, ours=mine, reference=theirs)
        for mode in ("strict", "loose")
        for i, (iid, mine, theirs) in enumerate(
            zip(ours.instruction_id_list, getattr(ours, mode), reference[mode], strict=True)
        )
        if mine != theirs
    ]


def compare_with_reference(report: IFEvalReport, reference_path: Path) -> list[Disagreement]:
    """Verdicts differing from the reference file, skipping keys it flags nondeterministic."""
    reference = {row["key"]: row for row in _read_jsonl(Path(reference_path))}
    found: list[Disagreement] = []
    for verdict in report.verdicts:
        ref = reference.get(verdict.key)
        if ref is None:
            raise ValueError(f"key {verdict.key} missing from reference {reference_path}")
        if not ref.get("nondeterministic_in_reference", False):
            found.extend(_disagreements_of(verdict, ref))
    return found


def category_accuracy(report: IFEvalReport, mode: str) -> dict[str, float]:
    """Instruction-level accuracy per category prefix (the part of the id before ':')."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for verdict in report.verdicts:
        for iid, flag in zip(verdict.instruction_id_list, getattr(verdict, mode), strict=True):
            cell = totals[iid.split(":")[0]]
            cell[0] += flag
            cell[1] += 1
    return {prefix: hits / count for prefix, (hits, count) in sorted(totals.items())}


def _mode_section(report: IFEvalReport, mode: str) -> list[str]:
    prompt = getattr(report, f"prompt_{mode}")
    instruction = getattr(report, f"instruction_{mode}")
    lines = [f"{mode}:", f"  prompt-level accuracy:      {prompt:.3f}", f"  instruction-level accuracy: {instruction:.3f}"]
    lines += [f"    {prefix:<22} {acc:.3f}" for prefix, acc in category_accuracy(report, mode).items()]
    return lines


def format_report(report: IFEvalReport) -> str:
    """Plain-text report: prompt and instruction accuracy, strict and loose, and per-category accuracy."""
    header = f"IFEval conformance: {len(report.verdicts)} prompts"
    return "\n".join([header, *_mode_section(report, "strict"), *_mode_section(report, "loose")])
