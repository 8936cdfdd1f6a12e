"""What the Run evaluation form shows is what the run covers: the protocols and domains a set (or the whole
benchmark) holds, with counts, "all" frozen into explicit names when the form is shown, and the stop point of a budget
below the estimate."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select

from core.generation.run_estimates import Estimate
from core.generation.runs import RunOptions
from core.protocols import get_protocol
from core.store.benchmark import where_instances
from core.store.models import Domain, Instance


@dataclass(frozen=True)
class ScopeChoices:
    """What a protocol/set choice holds: instance counts per protocol and per domain."""

    protocols: dict[str, int]
    domains: dict[str, int]

    def all_domains_label(self) -> str:
        """'all N domains (M instances)': the spelled-out meaning of an empty Domains choice."""
        return f"all {len(self.domains)} domains ({sum(self.domains.values())} instances)"


def scope_choices(engine: Engine, protocols: list[str], set_id: int | None) -> ScopeChoices:
    """Instances per protocol in the set (or the latest benchmark), and per domain within the chosen protocols: the
    instances select_instances covers, counted in the database (one GROUP BY, no instance rows loaded)."""
    query = where_instances(select(col(Instance.protocol), col(Domain.name), func.count())
                            .join(Domain, col(Domain.id) == col(Instance.domain_id)), latest_only=set_id is None,
                            set_id=set_id)
    with Session(engine) as session:
        counts = session.exec(query.group_by(col(Instance.protocol), col(Domain.name))).all()
    by_protocol: Counter[str] = Counter()
    by_domain: Counter[str] = Counter()
    for protocol, domain, n in counts:
        by_protocol[protocol] += int(n)
        if not protocols or protocol in protocols:
            by_domain[domain] += int(n)
    return ScopeChoices(dict(sorted(by_protocol.items())), dict(sorted(by_domain.items())))


def protocol_conditions(protocols: list[str] | tuple[str, ...]) -> list[str]:
    """The condition names the chosen protocols declare ('' = each protocol's default first), in a stable order."""
    names = [c for p in protocols for c in get_protocol(p).condition_names()]
    return list(dict.fromkeys(["", *names]))


def frozen_options(options: RunOptions, choices: ScopeChoices) -> RunOptions:
    """The options with an empty Domains choice replaced by the domains the form showed (never those imported later)."""
    return replace(options, domains=list(options.domains or choices.domains))


def affordable_items(estimate: Estimate, budget_usd: float | None) -> int | None:
    """About how many items a budget below the estimate's upper bound pays for: the free (cached, baseline) ones and
    as many paid calls as the budget covers at their average bound (None: no budget, or it covers every item)."""
    if not budget_usd or budget_usd >= estimate.max_cost_usd or not estimate.calls:
        return None
    per_call = estimate.max_cost_usd / estimate.calls
    return estimate.items - estimate.calls + math.floor(budget_usd / per_call)


def stop_point(estimate: Estimate, budget_usd: float | None) -> str:
    """'stops after about N of M items' when the budget is below the estimate, else ''."""
    affordable = affordable_items(estimate, budget_usd)
    if affordable is None:
        return ""
    return (f"A budget of ${budget_usd:.2f} is below the estimate of up to ${estimate.max_cost_usd:.4f}: the run "
            f"stops after about {affordable} of {estimate.items} items.")
