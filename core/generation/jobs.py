"""Background jobs: a run launched from the app (generation then scoring) in its own process, cancelled, and its stage-by-stage progress."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from core.config import REPO_ROOT
from core.generation.run_progress import RunProgress, progress_snapshot
from core.generation.runs import CANCEL_REQUEST, FINAL_STATUSES, get_run, request_cancel
from core.store.leases import lease_holder, run_lease
from core.store.models import utc_now

_LAUNCHED: dict[int, subprocess.Popen] = {}


def launch_in_background(engine: Engine, run_id: int, *, log_dir: str | os.PathLike | None = None) -> int:
    """Start `python -m core.cli run --resume RUN_ID` detached (it survives the caller); records and returns its pid."""
    from pathlib import Path

    logs = Path(log_dir or os.environ.get("GAUNTLET_LOG_DIR") or REPO_ROOT / "var" / "logs")
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"run-{run_id}.log", "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "core.cli", "run", "--resume", str(run_id), "--quiet"],
            cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    _LAUNCHED[process.pid] = process
    with Session(engine) as session:
        run = get_run(session, run_id)
        run.config = {**run.config, "pid": process.pid}
        session.add(run)
        session.commit()
    return process.pid


def wait_for_exit(pid: int | None, timeout: float) -> bool:
    """Block until the process `pid` that this process launched has exited (True), or `timeout` seconds pass (False);
    a pid launched elsewhere cannot be waited on and counts as exited only when it is gone."""
    process = _LAUNCHED.get(pid or 0)
    if process is None:
        return not process_alive(pid)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def process_alive(pid: int | None) -> bool:
    """Whether the process `pid` is still running (reaping it if we launched it)."""
    if not pid:
        return False
    if pid in _LAUNCHED:
        return _LAUNCHED[pid].poll() is None
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def executor_pid(engine: Engine, run_id: int, config: Mapping[str, Any]) -> int | None:
    """The pid of the process executing the run: its live lease holder on this host, else the one last recorded."""
    holder = lease_holder(engine, run_lease(run_id))
    if holder is not None and holder.host == socket.gethostname():
        return int(holder.pid)
    return config.get("pid")


def cancel_run(engine: Engine, run_id: int) -> str:
    """Cancel a run: ask the runner to stop, signal its process; a run whose process is gone is marked cancelled."""
    request_cancel(engine, run_id)
    with Session(engine) as session:
        run = get_run(session, run_id)
        pid = executor_pid(engine, run_id, run.config)
        if run.status == CANCEL_REQUEST and pid is not None and process_alive(pid):
            os.kill(pid, signal.SIGTERM)
        elif run.status == CANCEL_REQUEST:
            run.status, run.finished_at = "cancelled", utc_now()
            session.add(run)
            session.commit()
        return run.status


@dataclass(frozen=True)
class StageLine:
    """One line of a run's pipeline progress: generation, or scoring with one judge."""

    stage: str  # generation | scoring
    judge: str | None
    done: int
    total: int
    state: str  # waiting | running | finished | not scored | stopped

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else (1.0 if self.state == "finished" else 0.0)


def _scoring_line(judges: list[str], position: int, info: dict[str, Any], run_status: str, responses: int) -> StageLine:
    """Scoring progress of judges[position] from the run row's pipeline stage (judges score one after another)."""
    judge, stage = judges[position], info.get("stage")
    if stage == "finished":
        scored = run_status == "done"  # the pipeline scores only a run whose generation finished
        return StageLine("scoring", judge, responses if scored else 0, responses, "finished" if scored else "not scored")
    if stage != "scoring" or info.get("judge") not in judges:
        return StageLine("scoring", judge, 0, 0, "waiting")
    current, total = judges.index(info["judge"]), int(info.get("total", 0))
    if position < current:
        return StageLine("scoring", judge, total, total, "finished")
    if position > current:
        return StageLine("scoring", judge, 0, total, "waiting")
    done = int(info.get("done", 0))
    last = position == len(judges) - 1  # its scores are in, but the summaries are refreshed before the run finishes
    return StageLine("scoring", judge, done, total, "finished" if done >= total and not last else "running")


def split_judges(value: str | list[str] | None) -> list[str]:
    """Judge names from a comma-separated option or a list, order kept, duplicates and blanks dropped."""
    parts = value.split(",") if isinstance(value, str) else list(value or [])
    return list(dict.fromkeys(p.strip() for p in parts if p and p.strip()))


def pipeline_progress(engine: Engine, run_id: int, snapshot: RunProgress | None = None,
                      run_config: Mapping[str, Any] | None = None) -> list[StageLine]:
    """Generation (from the run's responses), then one scoring line per chosen judge (from the run row's stage).

    A line still waiting or running whose background process is gone reads "stopped". Pass `snapshot` when the
    caller already holds the run's progress_snapshot, and `run_config` when it holds the run row (its config).
    """
    snap = snapshot or progress_snapshot(engine, run_id)
    if run_config is None:
        with Session(engine) as session:
            run_config = get_run(session, run_id).config
    config = dict(run_config or {})
    info, judges = dict(config.get("pipeline") or {}), split_judges(config.get("judge"))
    pid = executor_pid(engine, run_id, config)
    generation = "finished" if snap.status in FINAL_STATUSES else "waiting" if snap.status == "pending" else "running"
    lines = [StageLine("generation", None, snap.finished, snap.total, generation)]
    lines += [_scoring_line(judges, i, info, snap.status, snap.done) for i in range(len(judges))]
    if info.get("stage") != "finished" and pid and not process_alive(pid):
        lines = [replace(line, state="stopped") if line.state in ("waiting", "running") else line for line in lines]
    return lines
