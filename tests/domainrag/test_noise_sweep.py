"""The noise sweep: 90 extractive questions x 5 noise counts x 3 gold positions + controls (the golden reference alone
and the gold repeated to each bundle size), built deterministically, with the gold passage where it is declared."""

from __future__ import annotations

import hashlib
import re

import pytest

from core.protocols.domainrag import (
    GOLDEN,
    NOISE_CONDITIONS,
    NOISE_COUNTS,
    REPEATED_CONDITIONS,
    applicable_conditions,
    declared_position,
    spec_prompt,
)

CONTROLS = [GOLDEN, *REPEATED_CONDITIONS]
BLOCK = re.compile(r"\[doc (\d+)\][^\n]*\n")


def _extractive(specs):
    return [s for s in specs if s.attributes.question_type == "extractive"]


def _blocks(user: str) -> list[str]:
    """The document texts of a rendered prompt, in order."""
    body = user.split("\n\nQuestion:")[0]
    pieces = BLOCK.split(body)[1:]
    return [text.strip() for text in pieces[1::2]]


def _sweep(specs) -> dict[tuple[str, str], tuple]:
    return {(s.id, c): spec_prompt(s, c) for s in _extractive(specs) for c in (*NOISE_CONDITIONS, *CONTROLS)}


def test_the_sweep_has_90_x_15_prompts_plus_controls_every_one_different(specs) -> None:
    sweep = _sweep(specs)
    noisy = [k for k in sweep if k[1] in NOISE_CONDITIONS]
    assert len(_extractive(specs)) == 90 and len(noisy) == 90 * 15 and len(sweep) == 90 * 15 + 90 * 6
    rendered = {hashlib.sha256(repr([m.content for m in msgs]).encode()).hexdigest() for msgs, _ in sweep.values()}
    assert len(rendered) == len(sweep)
    assert all(set(NOISE_CONDITIONS) | set(CONTROLS) <= set(applicable_conditions(s)) for s in _extractive(specs))


def test_the_sweep_is_deterministic(specs) -> None:
    first = {k: [m.content for m in msgs] for k, (msgs, _) in _sweep(specs).items()}
    second = {k: [m.content for m in msgs] for k, (msgs, _) in _sweep(specs).items()}
    assert first == second


@pytest.mark.parametrize(("count", "position"), [pytest.param(n, p, id=f"{n}-{p}")
                                                 for n in NOISE_COUNTS for p in ("first", "middle", "last")])
def test_the_gold_passage_sits_at_the_declared_position(specs, count, position) -> None:
    condition = f"noise_{count}_{position}"
    place = declared_position(count, position)
    assert place == {"first": 1, "middle": count // 2 + 1, "last": count + 1}[position]
    for spec in _extractive(specs):
        messages, meta = spec_prompt(spec, condition)
        blocks = _blocks(messages[-1].content)
        gold = spec.documents[0]
        noise = [d.text.strip() for d in spec.documents if d.variant["setting"] == "noise"][:count]
        assert len(blocks) == count + 1 and meta["gold_positions"] == [place]
        assert blocks[place - 1] == gold.text.strip()
        assert blocks[: place - 1] + blocks[place:] == noise, spec.id
        assert meta["doc_roles"].count("supporting") == 1


@pytest.mark.parametrize("count", NOISE_COUNTS)
def test_repeated_gold_fills_the_bundle_with_the_gold_passage(specs, count) -> None:
    for spec in _extractive(specs)[:10]:
        messages, meta = spec_prompt(spec, f"repeated_gold_{count}")
        assert _blocks(messages[-1].content) == [spec.documents[0].text.strip()] * (count + 1)
        assert meta["gold_positions"] == list(range(1, count + 2))


def test_golden_control_is_the_gold_passage_alone(specs) -> None:
    spec = _extractive(specs)[0]
    messages, meta = spec_prompt(spec, GOLDEN)
    assert _blocks(messages[-1].content) == [spec.documents[0].text.strip()] and meta["gold_positions"] == [1]
