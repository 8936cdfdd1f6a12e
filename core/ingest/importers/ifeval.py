"""IFEval (input_data.jsonl: key, prompt, instruction_id_list, kwargs): instruction-only instances."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.ingest.importers.base import Importer, Source
from core.ingest.importers.instructions import instruction_lists, rule_constraints
from core.store.schema import InstanceSpec


class IFEvalRecord(Source):
    key: int
    prompt: str
    instruction_id_list: list[str]
    kwargs: list[dict[str, Any]]


class IFEval(Importer):
    name = "ifeval"
    title = "IFEval"
    domain = "IFEval"
    Record = IFEvalRecord

    def build(self, record: IFEvalRecord, index: int, path: Path) -> dict[str, Any]:
        return {
            "id": f"ifeval/{record.key}", "domain": self.domain, "query": record.prompt,
            "protocol": "instruction_following", "language": "en",
            "constraints": rule_constraints(record.instruction_id_list, record.kwargs)[0],
        }

    def typed(self, spec: InstanceSpec) -> dict[str, Any]:
        return {"key": int(spec.id.removeprefix("ifeval/")), "prompt": spec.query, **instruction_lists(spec)}
