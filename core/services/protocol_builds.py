"""Authorised builds of a protocol's benchmark file, as the app runs them: the build its package declares
(`Protocol.builder`, the same core builder its `gauntlet <protocol> build` command calls), after re-checking the admin's
role (build_benchmark)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine

from core.protocols import PROTOCOLS, get_protocol
from core.protocols.base import Builder, BuildResult
from core.protocols.progress import Progress
from core.review.auth import Principal, authorize


def builders() -> dict[str, Builder]:
    """Every registered protocol that declares a builder, by id (sorted)."""
    return {name: b for name in PROTOCOLS.names() if (b := PROTOCOLS.get(name).builder) is not None}


def build_tabs() -> dict[str, str]:
    """The Build benchmark tabs, protocol id to tab label: those declaring their own build tab (`Protocol.build_panel`)
    first, then those declaring a builder, each by id."""
    panels = {name: p.tab for name in PROTOCOLS.names() if (p := PROTOCOLS.get(name).build_panel) is not None}
    return {**panels, **{name: b.tab for name, b in builders().items() if name not in panels}}


def build_protocol(engine: Engine, principal: Principal | None, protocol: str, source: Path, out_dir: Path, *,
                   fmt: str = "", seed: int = 0, limit: int | None = None, bm25_only: bool = True,
                   progress: Progress | None = None) -> BuildResult:
    """Build `protocol`'s benchmark from `source` into out_dir/instances.jsonl with its declared builder (a protocol
    without one: KeyError naming those with one)."""
    authorize(engine, principal, "build_benchmark")
    builder = get_protocol(protocol).builder
    if builder is None:
        raise KeyError(f"protocol {protocol!r} declares no builder; these do: {', '.join(builders())}")
    return builder.function()(source, out_dir, fmt=fmt, seed=seed, limit=limit, bm25_only=bm25_only,
                              progress=progress)
