"""What a product owner decides on, as data: the named presets (data/decision/presets.yaml) and the rules file of
`gauntlet decide RUN --rules decide.yaml` (a file a team keeps in its repository, read like the gate's rules).

A rules file holds any of: `preset` (a named starting point), `weights` and `floors` (mappings of `protocol:metric`,
the default protocol's metrics bare, to a weight or a fraction; given, they replace the preset's), `budget_per_1k`,
`domains`, `subsets` and `question`. Metric names are checked against every registered protocol's declarations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from core.analysis.gate import read_yaml
from core.analysis.readmodel.decision_scores import decision_catalogue, decision_key, normal_key
from core.config import REPO_ROOT

PRESETS_FILE = REPO_ROOT / "data" / "decision" / "presets.yaml"
DEFAULT_PRESET = "EnterpriseRAG paper"
_RULE_KEYS = {"preset", "weights", "floors", "budget_per_1k", "domains", "subsets", "question"}


@dataclass(frozen=True)
class Preset:
    """A named choice of weights (and floors: None means the declared floor of each weighted metric)."""

    name: str
    description: str
    weights: dict[str, float]
    floors: dict[str, float] | None = None

    def default_floors(self) -> dict[str, float]:
        """The preset's floors, else the declared default floor of each metric it weighs."""
        if self.floors is not None:
            return dict(self.floors)
        declared = {k: decision_key(k).metric.floor for k in self.weights}
        return {k: v for k, v in declared.items() if v is not None}


@dataclass(frozen=True)
class DecideRules:
    """A rules file, checked: the preset it starts from and what it sets (None: the preset's or the page's default)."""

    preset: str = DEFAULT_PRESET
    weights: dict[str, float] | None = None
    floors: dict[str, float] | None = None
    budget_per_1k: float | None = None
    domains: tuple[str, ...] = ()
    subsets: tuple[str, ...] = ()
    question: str | None = None
    explicit_preset: bool = field(default=False, compare=False)


def metric_values(data: Any, what: str, fraction: bool) -> dict[str, float]:
    """A `metric: number` mapping with checked, canonical keys (ValueError naming the bad entry and the known ones)."""
    if not isinstance(data, dict):
        raise ValueError(f"{what} must be a mapping of metric to number, got {data!r}")
    out: dict[str, float] = {}
    for name, value in data.items():
        try:
            decision_key(str(name))
        except KeyError as error:
            raise ValueError(f"{what}: {error.args[0]}") from None
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: {name} needs a number, got {value!r}") from None
        if number < 0 or (fraction and number > 1):
            raise ValueError(f"{what}: {name} must be {'a fraction in [0, 1]' if fraction else '>= 0'}, got {number}")
        out[normal_key(str(name))] = number
    return out


def _preset(entry: Any) -> Preset:
    if not isinstance(entry, dict) or not entry.get("name") or "weights" not in entry:
        raise ValueError(f"presets: each preset needs a name and weights, got {entry!r}")
    floors = entry.get("floors")
    return Preset(str(entry["name"]), str(entry.get("description", "")),
                  metric_values(entry["weights"], f"preset {entry['name']!r} weights", False),
                  None if floors is None else metric_values(floors, f"preset {entry['name']!r} floors", True))


def load_presets(path: str | Path = PRESETS_FILE) -> dict[str, Preset]:
    """The named presets of the data file, checked against the registered protocols' declarations."""
    data = read_yaml(path)
    entries = (data or {}).get("presets") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path}: needs a 'presets' list")
    presets = [_preset(e) for e in entries]
    return {p.name: p for p in presets}


@cache
def _cached_presets(registered: tuple[str, ...]) -> dict[str, Preset]:
    return load_presets()


def presets() -> dict[str, Preset]:
    """load_presets of the shipped file (once per set of registered decision metrics)."""
    return _cached_presets(tuple(decision_catalogue()))


def preset(name: str) -> Preset:
    """The preset called `name`; an unknown name lists the known ones."""
    known = presets()
    if name not in known:
        raise KeyError(f"unknown preset {name!r}; known: {', '.join(known)}")
    return known[name]


def parse_rules(data: Any) -> DecideRules:
    """DecideRules from a rules file's mapping; ValueError names the bad key or value."""
    if data is None:
        return DecideRules()
    if not isinstance(data, dict):
        raise ValueError("the rules file must be a mapping (preset, weights, floors, budget_per_1k, domains, subsets, "
                         "question)")
    unknown = sorted(set(data) - _RULE_KEYS)
    if unknown:
        raise ValueError(f"unknown rules key(s) {', '.join(unknown)}; known: {', '.join(sorted(_RULE_KEYS))}")
    name = str(data.get("preset") or DEFAULT_PRESET)
    try:
        preset(name)
    except KeyError as error:
        raise ValueError(f"rules: {error.args[0]}") from None
    weights = None if data.get("weights") is None else metric_values(data["weights"], "weights", False)
    floors = None if data.get("floors") is None else metric_values(data["floors"], "floors", True)
    budget = data.get("budget_per_1k")
    return DecideRules(name, weights, floors, None if budget is None else float(budget),
                       tuple(str(d) for d in data.get("domains") or ()), tuple(str(s) for s in data.get("subsets") or ()),
                       None if data.get("question") is None else str(data["question"]), "preset" in data)


def load_rules(path: str | Path) -> DecideRules:
    """Read and check a `gauntlet decide` rules file (YAML or JSON)."""
    return parse_rules(read_yaml(path))
