"""Protocols as plug-ins: one module each, one registry (EnterpriseRAG first, then reference-answer QA)."""

from __future__ import annotations

from core.metrics import check_declared
from core.protocols.base import Condition, Protocol
from core.registry import Registry, unknown_name_message
from core.store.schema import RENAMED_PROTOCOLS, InstanceSpec

PROTOCOLS: Registry[Protocol] = Registry("protocol")
for _old, _new in RENAMED_PROTOCOLS.items():
    PROTOCOLS.rename(_old, _new)


def register(protocol: Protocol) -> Protocol:
    """Add a protocol to the registry (a duplicate name raises; so does a metric not declared in core.metrics, naming
    the close matches)."""
    check_declared(protocol.metrics, f"protocol {protocol.name!r}")
    PROTOCOLS.add(protocol.name, protocol)
    return protocol


def get_protocol(name: str) -> Protocol:
    """The protocol called `name`; an unknown name lists the known ones."""
    return PROTOCOLS.get(name)


def protocol_errors(spec: InstanceSpec) -> list[tuple[str, str]]:
    """(field, message) problems of `spec` under its protocol, including an unknown protocol name."""
    if spec.protocol not in PROTOCOLS:
        return [("protocol", unknown_name_message("protocol", spec.protocol, PROTOCOLS.names()))]
    return PROTOCOLS.get(spec.protocol).errors(spec)


from core.protocols import (  # noqa: E402,F401  (registers them)
    domainrag,  # noqa: E402,F401  (registers it)
    enterprise_rag,
    instruction_following,
    kb_corruption,  # noqa: E402,F401  (registers it)
    lit_ragbench,  # noqa: E402,F401  (registers it)
    misleading_evidence,  # noqa: E402,F401  (registers it)
    production_rag,  # noqa: E402,F401  (registers it)
    reference_qa,
)

__all__ = ["PROTOCOLS", "Condition", "Protocol", "get_protocol", "protocol_errors", "register"]
