"""Measure an offline judge on a hand-labelled set of EnterpriseRAG answers: mean absolute error of faithfulness and
coverage per metric and per answer style (tests/fixtures/offline_judge_hand_set.jsonl; format in docs/judges.md)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from core.scoring.judges.base import DocumentView, Judge, JudgeInput, MetricOutcome
from core.scoring.judges.heuristic import HeuristicJudge

HAND_SET = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "offline_judge_hand_set.jsonl"
METRICS = ("faithfulness", "coverage")
MISMATCH_ERROR = 1.0


@dataclass
class MetricTally:
    """Absolute errors of one metric on one slice, with the items left out and why."""

    errors: list[float] = field(default_factory=list)
    unsupported: int = 0
    both_absent: int = 0

    def mae(self) -> float | None:
        """Mean absolute error, None when no item was scored."""
        return sum(self.errors) / len(self.errors) if self.errors else None


def load_hand_set(path: Path = HAND_SET) -> list[dict]:
    """The rows of a hand set JSONL file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def judge_input(row: dict) -> JudgeInput:
    """A hand set row as the judge sees it."""
    docs = [DocumentView(position=i, **d) for i, d in enumerate(row["documents"], start=1)]
    return JudgeInput(query=row["query"], mode=row["mode"], documents=docs, response=row["answer"],
                      language=row["language"])


async def judge_row(judge: Judge, row: dict) -> dict[str, MetricOutcome]:
    """Faithfulness and coverage of one row's answer."""
    item = judge_input(row)
    claims = await judge.context_claims(item)
    return {"faithfulness": await judge.faithfulness(item), "coverage": await judge.coverage(item, claims)}


def row_error(intended: float | None, out: MetricOutcome) -> float | None:
    """|judged - intended|; a metric judged not applicable where a value was intended (or the reverse) counts as a
    full miss (1.0); None when both agree it does not apply."""
    judged = out.value if out.status == "ok" else None
    if intended is None and judged is None:
        return None
    if intended is None or judged is None:
        return MISMATCH_ERROR
    return abs(judged - intended)


def tally(rows: list[dict], outcomes: list[dict[str, MetricOutcome]]) -> dict[tuple[str, str], MetricTally]:
    """Per (metric, slice) tallies; slices are 'all' and 'style:<style>' and 'language:<lang>'."""
    out: dict[tuple[str, str], MetricTally] = defaultdict(MetricTally)
    for row, judged in zip(rows, outcomes, strict=True):
        for metric in METRICS:
            o = judged[metric]
            for key in ("all", f"style:{row['style']}", f"language:{row['language']}"):
                t = out[(metric, key)]
                if o.status == "not_applicable" and "unsupported for language" in o.reason:
                    t.unsupported += 1
                elif (err := row_error(row[metric], o)) is None:
                    t.both_absent += 1
                else:
                    t.errors.append(err)
    return dict(out)


def measure(judge: Judge, rows: list[dict]) -> dict[tuple[str, str], MetricTally]:
    """Judge every row and tally the errors."""
    async def run() -> list[dict[str, MetricOutcome]]:
        return [await judge_row(judge, r) for r in rows]

    return tally(rows, asyncio.run(run()))


def report_lines(tallies: dict[tuple[str, str], MetricTally]) -> list[str]:
    """A table: metric, slice, MAE, n scored, n where both agree it does not apply, n unsupported for the language."""
    lines = [f"{'metric':<13} {'slice':<26} {'MAE':>6} {'n':>4} {'n/a':>4} {'unsupported':>11}"]
    for (metric, key), t in sorted(tallies.items(), key=lambda kv: (kv[0][0], kv[0][1] != "all", kv[0][1])):
        mae = t.mae()
        shown = f"{mae:.3f}" if mae is not None else "-"
        lines.append(f"{metric:<13} {key:<26} {shown:>6} {len(t.errors):>4} {t.both_absent:>4} {t.unsupported:>11}")
    return lines


def main(argv: list[str]) -> None:
    """Print the heuristic judge's errors on a hand set (default: the shipped one)."""
    rows = load_hand_set(Path(argv[0]) if argv else HAND_SET)
    print("\n".join(report_lines(measure(HeuristicJudge(), rows))))


if __name__ == "__main__":
    main(sys.argv[1:])
