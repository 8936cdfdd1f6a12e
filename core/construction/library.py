"""Atomic instruction libraries: YAML files of per-domain atomics, validated and merged with a common one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from core.store.schema import SUB_DIMENSIONS_BY_CATEGORY, ConstraintSpec

CATEGORY_OF: dict[str, str] = {sub: cat for cat, subs in SUB_DIMENSIONS_BY_CATEGORY.items() for sub in subs}
BUNDLE_FEATURES = ("statutes", "tables", "multi_source", "numbers", "dates")


@dataclass(frozen=True)
class Atomic:
    """One atomic instruction with its sampling probability and how it is judged."""

    id: str
    sub_dimension: str
    instruction: str
    probability: float
    generalization: bool
    judge_method: str
    checker_id: str | None = None
    kwargs: dict = field(default_factory=dict, hash=False, compare=False)
    criterion: str | None = None
    precondition: str | None = None
    tags: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    domain: str = "common"

    @property
    def category(self) -> str:
        return CATEGORY_OF[self.sub_dimension]

    def to_constraint(self, cid: str) -> ConstraintSpec:
        """The schema constraint for this atomic under instance-local id `cid`."""
        return ConstraintSpec(
            id=cid,
            text=self.instruction,
            category=self.category,
            sub_dimension=self.sub_dimension,
            judge_method=self.judge_method,
            checker_id=self.checker_id,
            checker_kwargs=dict(self.kwargs),
            criterion=self.criterion,
            precondition=self.precondition,
        )


def atomic_from_record(record: dict, domain: str) -> Atomic:
    """Validate one YAML record into an Atomic (raises ValueError naming the atomic)."""
    aid = record.get("id", "?")
    sub = record.get("sub_dimension")
    if sub not in CATEGORY_OF:
        raise ValueError(f"atomic {aid}: unknown sub_dimension {sub!r}")
    method = str(record.get("judge_method", "")).lower()
    detail = record.get("judge_detail") or {}
    prob = float(record.get("probability", -1))
    if not 0.0 <= prob <= 1.0:
        raise ValueError(f"atomic {aid}: probability {prob} outside [0, 1]")
    requires = tuple(record.get("requires", ()))
    unknown = [r for r in requires if r not in BUNDLE_FEATURES]
    if unknown:
        raise ValueError(f"atomic {aid}: unknown requires {unknown}; known {BUNDLE_FEATURES}")
    atomic = Atomic(
        id=str(aid), sub_dimension=sub, instruction=str(record.get("instruction", "")).strip(),
        probability=prob, generalization=bool(record.get("generalization", False)), judge_method=method,
        checker_id=detail.get("checker_id"), kwargs=dict(detail.get("kwargs") or {}),
        criterion=detail.get("criterion"), precondition=record.get("precondition"),
        tags=tuple(record.get("tags", ())), excludes=tuple(record.get("excludes", ())), requires=requires,
        domain=domain,
    )
    atomic.to_constraint("c0")  # schema validation (method fields, precondition values)
    return atomic


def load_library(path: str | Path) -> list[Atomic]:
    """Load one library YAML file."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    domain = str(data.get("domain", Path(path).stem))
    return [atomic_from_record(rec, domain) for rec in data.get("atomics", [])]


def load_libraries(paths: Sequence[str | Path]) -> list[Atomic]:
    """Load and merge several library files; duplicate atomic ids raise."""
    atomics = [a for p in paths for a in load_library(p)]
    ids = [a.id for a in atomics]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"duplicate atomic ids: {dupes}")
    return atomics


def domain_library_paths(library_dir: str | Path, domain: str) -> list[Path]:
    """common.yaml (if present) plus <domain>.yaml from a library directory."""
    root = Path(library_dir)
    paths = [root / "common.yaml", root / f"{domain}.yaml"]
    return [p for p in paths if p.exists()]


def checker_errors(atomics: list[Atomic]) -> list[str]:
    """Rule atomics whose checker id is unknown or whose kwargs the checker rejects."""
    from core.scoring.checkers import CHECKERS, kwargs_errors

    problems = []
    for a in atomics:
        if a.judge_method != "rule":
            continue
        if a.checker_id is None or a.checker_id not in CHECKERS:
            problems.append(f"{a.id}: unknown checker {a.checker_id}")
            continue
        problems += [f"{a.id}: {e}" for e in kwargs_errors(a.checker_id, a.kwargs)]
    return problems
