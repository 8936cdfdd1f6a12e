"""Valid label lines (one per annotation kind) on the seeded workspace database, for the import hardening tests."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.workspace_factories import Seeded


def _line(kind: str, target_type: str, target_id: int, ref: dict[str, Any], author: str, payload: dict[str, Any],
          token: str, created_at: str = "2025-01-02T03:04:05+00:00") -> dict[str, Any]:
    return {"kind": kind, "target_type": target_type, "target_id": target_id, "target_ref": ref, "author": author,
            "payload": payload, "guidelines_version": "1.0+abcd1234", "client_token": token, "created_at": created_at}


def gold_line(seeded: Seeded, kind: str = "gold_label", token: str = "gold-1") -> dict[str, Any]:
    """A gold label (or response adjudication) of model-a's answer on the noisy instance E-noisy."""
    ref = {"run_id": seeded.run_id, "model": "model-a", "instance_uid": "E-noisy"}
    payload = {"constraints": {"c1": True, "c2": False}, "note": "fine"}
    return _line(kind, "response", seeded.responses[("model-a", "E-noisy")], ref, "alice", payload, token,
                 "2025-01-02T03:04:05.000006+00:00")


GAP_REF = {"instance_uid": "E-gap", "instance_version": 1}


def verification_line(seeded: Seeded, token: str = "verify-1") -> dict[str, Any]:
    """An expert's verification decision on instance E-gap (version 1)."""
    payload = {**GAP_REF, "consistency": "inconsistent", "clashing_constraints": ["c1"], "consistency_note": "",
               "context_valid": True, "context_note": "", "role_corrections": {"E-gap-d1": "partial"},
               "constraint_edits": {}, "decision": "needs_edit", "resulting_status": "unverified", "new_instance_id": None}
    return _line("verification", "instance", seeded.instances["E-gap"], GAP_REF, "bob", payload, token)


def instance_adjudication_line(seeded: Seeded, token: str = "adj-inst-1") -> dict[str, Any]:
    """An admin's final decision on a verification disagreement about E-gap."""
    payload = {**GAP_REF, "decision": "reject", "note": "", "expert_decisions": {"alice": "accept", "bob": "reject"},
               "resulting_status": "rejected"}
    return _line("adjudication", "instance", seeded.instances["E-gap"], GAP_REF, "admin", payload, token)


def valid_lines(seeded: Seeded) -> list[dict[str, Any]]:
    """One valid line of every kind and target type."""
    return [gold_line(seeded), gold_line(seeded, "adjudication", "adj-resp-1"), verification_line(seeded),
            instance_adjudication_line(seeded)]


def changed(line: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `line` with the dotted `path` set to `value` (a missing leaf is created)."""
    out = copy.deepcopy(line)
    *parents, leaf = path.split(".")
    node = out
    for part in parents:
        node = node[part]
    node[leaf] = value
    return out


def jsonl(*rows: dict[str, Any] | str) -> str:
    """Rows as JSONL text; strings are written as given (raw, possibly invalid, lines)."""
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
