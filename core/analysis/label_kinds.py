"""The judge checked against the experts' labels of a protocol's expert label kinds (`Protocol.labels`,
core.protocols.base.LabelKind): per labelled unit of an answer, the judge's decision (read from the details of its
verdict on the kind's `checks` metric by the kind's `judged` reading) against the expert's value (1 when it is one
of the kind's `agrees` values). Agreement, Cohen's kappa and n over the units the judge decided, the rest counted.
Judge alignment and a protocol's own report read these; no protocol is named here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.analysis.stats import cohen_kappa
from core.metrics import resolve_hook
from core.protocols.base import LabelKind
from core.store.labels import effective_annotations, response_ids_for_runs
from core.store.models import Verdict


@dataclass
class Agreement:
    """Two raters' binary verdicts on the same items: agreement, Cohen's kappa (None when undefined) and n."""

    n: int
    agreement: float | None
    kappa: float | None
    undecided: int = 0  # items one rater left undecided (not in n)

    @classmethod
    def of(cls, a: Sequence[int | None], b: Sequence[int]) -> Agreement:
        """The agreement over the items `a` decided."""
        pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None]
        undecided = len(a) - len(pairs)
        if not pairs:
            return cls(0, None, None, undecided)
        k = cohen_kappa([x for x, _ in pairs], [y for _, y in pairs])
        return cls(len(pairs), k.agreement, None if k.degenerate else k.kappa, undecided)

    def line(self) -> str:
        """'agreement 93.8%, κ 0.85 (n 32; 4 undecided)'."""
        if self.agreement is None:
            return f"no decided item (n 0; {self.undecided} undecided)"
        kappa = "κ undefined" if self.kappa is None else f"κ {self.kappa:.2f}"
        return f"agreement {self.agreement * 100:.1f}%, {kappa} (n {self.n}; {self.undecided} undecided)"


def label_kind_agreement(engine: Engine, run_ids: Sequence[int] | None, judge: str, kind: LabelKind) -> Agreement:
    """The judge's decision on each labelled unit against the experts' labels of `kind` (each expert's latest label
    counts; `run_ids` None: every run)."""
    labels = effective_annotations(engine, "gold_label", response_ids_for_runs(engine, run_ids), "response")
    with Session(engine) as session:
        query = select(Verdict).where(Verdict.judge == judge, Verdict.metric == kind.checks)
        if run_ids is not None:
            query = query.where(col(Verdict.run_id).in_(list(run_ids)))
        rows = session.exec(query).all()
    reading = resolve_hook(kind.judged)
    decided: dict[int, list[int | None]] = {v.response_id: reading(v.details or {}) for v in rows}
    judged: list[int | None] = []
    expert: list[int] = []
    for response_id, by_author in labels.items():
        for label in by_author.values():
            for n, value in (label.payload.get(kind.name) or {}).items():
                units = decided.get(response_id, [])
                judged.append(units[int(n) - 1] if int(n) <= len(units) else None)
                expert.append(int(value in kind.agrees))
    return Agreement.of(judged, expert)


def label_kind_columns(kind: LabelKind) -> list[str]:
    """The columns of `label_kind_table`."""
    return ["Judge", "Agreement %", "κ", f"n {kind.unit}s", "n undecided"]


def label_kind_table(engine: Engine, kind: LabelKind) -> pd.DataFrame:
    """Per judge that scored the kind's checked metric, over every run: agreement %, kappa, n decided and n undecided
    against the experts' labels of `kind`; empty without such labels (what Judge alignment shows)."""
    with Session(engine) as session:
        judges = sorted(set(session.exec(select(Verdict.judge).where(Verdict.metric == kind.checks).distinct()).all()))
    rows = []
    for judge in judges:
        a = label_kind_agreement(engine, None, judge, kind)
        if a.n or a.undecided:
            rows.append([judge, None if a.agreement is None else round(100 * a.agreement, 1),
                         None if a.kappa is None else round(a.kappa, 3), a.n, a.undecided])
    return pd.DataFrame(rows, columns=label_kind_columns(kind))
