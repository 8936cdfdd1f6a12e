"""ALCE's published outputs as stored runs: each result file of ALCE's citation human evaluation (or the shipped
subset, data/suites/alce/) becomes a named set of citation instances (the cited documents under their numbers) plus a
run holding that file's outputs under the model 'deployed:ALCE <result file>', one transaction per result file.
`gauntlet score RUN` then scores them like any run, so they appear on the citation page, in the report and in the
decision; prompt_meta `citation_docs` numbers the documents as ALCE's prompt did. ALCE publishes only the documents
an output cites, so an output citing nothing is stored with an instance without documents: its response is scored
(no citation: unsupported), but the instance cannot be asked again (the protocol's import check refuses it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session

from core.ingest.deployed import deployed_model_name, record_deployed_run
from core.ingest.sets import import_set
from core.store.schema import InstanceSpec

from .builder_alce_eval import AlceResponse, read_alce_human_eval

FORMAT = "alce-human-eval"


@dataclass
class AlceImport:
    """What importing ALCE's outputs did: a run and a set per result file, or the errors (nothing imported)."""

    runs: dict[str, int] = field(default_factory=dict)  # model name -> run id
    sets: dict[str, str] = field(default_factory=dict)  # model name -> set name
    responses: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def lines(self) -> list[str]:
        """One line per imported run (model, run id, set), or the errors."""
        return self.errors or [f"run {run_id}: {model} ({self.sets[model]})" for model, run_id in self.runs.items()]


def service_of(resp: AlceResponse) -> str:
    """The service name of a result file: 'ALCE <dataset>/<result file without .json>'."""
    return f"ALCE {resp.dataset}/{resp.result_file.removesuffix('.json')}"


def _import_file(engine: Engine, responses: list[AlceResponse], source: str, report: AlceImport) -> None:
    service = service_of(responses[0])
    specs = [(n, InstanceSpec.model_validate(r.instance())) for n, r in enumerate(responses, start=1)]
    answers = {r.uid: r.output for r in responses}
    meta = {r.uid: {"citation_docs": r.citation_docs(), "alce": {"result_file": r.result_file, "qid": r.qid}}
            for r in responses}
    config = {"format": FORMAT, "file": source, "set": service, "service": service, "outputs": len(responses),
              "name": f"published {service} ({source})",
              "message": f"ALCE's published outputs of {responses[0].result_file} imported from {source}"}
    model = deployed_model_name(service)
    run: dict[str, int] = {}

    def record(session: Session, member_of: dict[str, int]) -> None:
        run["id"] = record_deployed_run(session, member_of, answers, service, config, meta)

    done = import_set(engine, specs, service, on_changed="rename", origin="alce", source=source, on_members=record)
    if done.errors:
        report.errors += [f"{service}: {e}" for e in done.errors]
        return
    report.runs[model], report.sets[model] = run["id"], service
    report.responses += len(responses)


def import_alce_outputs(engine: Engine, path: Path, *, limit: int | None = None) -> AlceImport:
    """Every result file of ALCE's citation human-evaluation file at `path` (its first `limit` outputs) as a set and a
    stored run (one transaction per result file); a record that does not fit is refused naming it (AlceRecordError)
    before anything is imported."""
    responses = read_alce_human_eval(Path(path))[:limit]
    report = AlceImport()
    by_file: dict[tuple[str, str], list[AlceResponse]] = {}
    for resp in responses:
        by_file.setdefault((resp.dataset, resp.result_file), []).append(resp)
    for group in by_file.values():
        _import_file(engine, group, Path(path).name, report)
    return report
