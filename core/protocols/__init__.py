"""Protocols as plug-ins: one package each (core/protocols/<id>/), one registry.

Importing core.protocols imports every subpackage (core.plugins lists them without importing); each package's
__init__ declares its protocol and calls `register`. A package outside core (a plug-in, a test's toy protocol) joins
with `register_package`. The CLI commands, the app's navigation, the permission table and the docs index are derived
from the registered packages. docs/architecture.md walks through adding one.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from core import plugins
from core.metrics import DECLARATIONS, check_declared, get_metric, undeclare_package
from core.permissions import add_page, remove_page
from core.protocols.base import Condition, LabelKind, Protocol, ProtocolPage
from core.registry import Registry, UnknownNameError, unknown_name_message
from core.store.label_models import GoldPayload
from core.store.schema import RENAMED_PROTOCOLS, InstanceSpec

PROTOCOLS: Registry[Protocol] = Registry("protocol")
for _old, _new in RENAMED_PROTOCOLS.items():
    PROTOCOLS.rename(_old, _new)
PACKAGE_OF: dict[str, str] = {}  # protocol name -> the package that registered it
LABEL_KINDS: Registry[LabelKind] = Registry("label kind")  # every protocol's expert label kinds, by payload field


DEFAULT_PROTOCOL = plugins.DEFAULT_PROTOCOL  # the protocol of record: what an instance without a protocol, and the picker, use


@dataclass(frozen=True)
class DecisionMetric:
    """What a decision across protocols reads of one metric of a protocol: its role (headline or diagnostic), whether
    higher is better, its default floor (a ceiling when lower is better; None: no default), the judge kinds that can
    decide it and its one-line meaning."""

    id: str
    label: str
    role: Literal["headline", "diagnostic"]
    higher_is_better: bool
    floor: float | None
    judges: tuple[str, ...]
    meaning: str


def register(protocol: Protocol) -> Protocol:
    """Add a protocol to the registry, from its package's __init__ (a duplicate name raises; so do a metric or an
    aggregate not declared in core.metrics, naming the close matches, a headline metric it does not report, and modes for a metric it does not declare); its
    page joins the permission table."""
    owner = f"protocol {protocol.name!r}"
    check_declared((*protocol.metrics, *protocol.aggregates), owner)
    reported = protocol.decision_metric_ids()
    for name in protocol.headline:
        if name not in reported:
            raise UnknownNameError(f"{owner} names a headline metric it does not report: "
                                   f"{unknown_name_message('metric', name, reported)}")
    for scope in protocol.metric_modes:
        if scope.metric not in protocol.metrics:
            raise UnknownNameError(f"{owner} gives modes to a metric it does not declare: "
                                   f"{unknown_name_message('metric', scope.metric, protocol.metrics)}")
    _check_label_kinds(protocol)
    taken = [s.name for s in protocol.judge_suites if s.name in judge_suites()]
    if taken:
        raise ValueError(f"{owner}: judge suite {taken[0]!r} is declared already")
    PROTOCOLS.add(protocol.name, protocol)
    for kind in protocol.labels:
        LABEL_KINDS.add(kind.name, kind)
    PACKAGE_OF[protocol.name] = sys._getframe(1).f_globals.get("__name__", "")
    for page in protocol.declared_pages():
        add_page(page.path, page.audience)
    return protocol


def _check_label_kinds(protocol: Protocol) -> None:
    """A label kind must be well-formed, check a metric the protocol reports and take a payload field nobody has."""
    owner = f"protocol {protocol.name!r}"
    for kind in protocol.labels:
        if kind.problems():
            raise ValueError(f"{owner}, label kind {kind.name!r}: {'; '.join(kind.problems())}")
        if kind.checks not in protocol.metrics:
            raise UnknownNameError(f"{owner}, label kind {kind.name!r} checks a metric it does not report: "
                                   f"{unknown_name_message('metric', kind.checks, protocol.metrics)}")
    names = [kind.name for kind in protocol.labels]
    taken = [n for n in names if n in GoldPayload.model_fields or n in LABEL_KINDS or names.count(n) > 1]
    if taken:
        raise ValueError(f"{owner}: label kind {taken[0]!r} names a gold-label field taken already (a shared field "
                         "or a label kind declared before)")


def judge_suites() -> dict[str, str]:
    """Every protocol's judge-check suites: name -> its check's 'module:function'."""
    return {suite.name: suite.check for _, protocol in PROTOCOLS.items() for suite in protocol.judge_suites}


def label_kinds(protocol: str | None = None) -> tuple[LabelKind, ...]:
    """The expert label kinds `protocol`'s responses take (None: every protocol's), in declaration order."""
    if protocol is None:
        return tuple(kind for _, kind in LABEL_KINDS.items())
    return get_protocol(protocol).labels if protocol in PROTOCOLS else ()


def register_package(package: str) -> list[Protocol]:
    """Import a protocol package from outside core.protocols by dotted name and return the protocols it registered;
    a package registered twice, or a protocol name taken already, raises ValueError."""
    plugins.add_package(package)
    try:
        importlib.import_module(package)
    except BaseException:
        plugins.remove_package(package)
        raise
    return [PROTOCOLS.get(name) for name, owner in PACKAGE_OF.items() if owner == package]


def unregister_package(package: str) -> None:
    """Take an extra package's protocols, pages and metric declarations out of the registries again (a test's toy
    protocol)."""
    for name in [n for n, owner in PACKAGE_OF.items() if owner == package]:
        for page in PROTOCOLS.get(name).declared_pages():
            remove_page(page.path)
        for kind in PROTOCOLS.get(name).labels:
            LABEL_KINDS.remove(kind.name)
        PROTOCOLS.remove(name)
        del PACKAGE_OF[name]
    undeclare_package(package)
    if package in plugins.EXTRA_PACKAGES:  # a package discovered inside core/protocols was never added
        plugins.remove_package(package)
    for module in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[module]


def get_protocol(name: str) -> Protocol:
    """The protocol called `name` (or renamed from it); an unknown name lists the known ones and the close matches."""
    return PROTOCOLS.get(name)


def page_protocol(path: str) -> str:
    """The name of the protocol that declares the page script `path` (a page opens on that protocol's runs); a page
    no protocol declares raises, listing the declared pages."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    owners = {page.path.rsplit("/", 1)[-1]: protocol.name for _, protocol in PROTOCOLS.items()
              for page in protocol.declared_pages()}
    if name not in owners:
        raise UnknownNameError(unknown_name_message("protocol page", name, sorted(owners)))
    return owners[name]


def constraint_protocols() -> tuple[str, ...]:
    """The protocols whose responses are scored constraint by constraint with their claims and mode metrics
    (`response_scoring="constraints"`: EnterpriseRAG), read by the scorer and the read model's response scores."""
    return tuple(name for name in PROTOCOLS.names() if PROTOCOLS.get(name).response_scoring == "constraints")


def decision_metrics(protocol: str) -> tuple[DecisionMetric, ...]:
    """Every metric `protocol` reports (per response, then derived) as a decision reads it, headline ones first."""
    return _decision_metrics(protocol, PROTOCOLS.version, DECLARATIONS.version)


@lru_cache(maxsize=256)
def _decision_metrics(protocol: str, *_registered: int) -> tuple[DecisionMetric, ...]:
    """decision_metrics, kept per protocol while no protocol or metric is registered or removed (the picker asks
    about 1,400 times per page)."""
    chosen = get_protocol(protocol)
    rows = [DecisionMetric(m.id, m.label, "headline" if m.id in chosen.headline else "diagnostic", m.higher_is_better,
                           m.floor, m.judges, m.description) for m in map(get_metric, chosen.decision_metric_ids())]
    return tuple(sorted(rows, key=lambda row: row.role != "headline"))


def protocol_errors(spec: InstanceSpec) -> list[tuple[str, str]]:
    """(field, message) problems of `spec` under its protocol, including an unknown protocol name."""
    if spec.protocol not in PROTOCOLS:
        return [("protocol", unknown_name_message("protocol", spec.protocol, PROTOCOLS.names()))]
    return PROTOCOLS.get(spec.protocol).errors(spec)


def discover() -> None:
    """Import every protocol package of core.protocols that is not imported yet (each registers its protocol)."""
    for package in plugins.builtin_packages():
        importlib.import_module(package)


discover()

__all__ = ["DEFAULT_PROTOCOL", "LABEL_KINDS", "PACKAGE_OF", "PROTOCOLS", "Condition", "DecisionMetric", "LabelKind",
           "Protocol", "ProtocolPage", "constraint_protocols", "judge_suites", "label_kinds", "decision_metrics", "get_protocol", "page_protocol", "protocol_errors", "register", "register_package", "unregister_package"]
