"""Running evaluations from the app: register and edit models (keys and endpoints stay in the environment or
.streamlit/secrets.toml; a model names the variables), which variables a model needs and which are unset, a preflight
call per model before launch with a readable error, launch and retry in the background (processes reaped), and the
honest outcome of a run (done / done with failures / failed / cancelled)."""

from __future__ import annotations

import asyncio
import re
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.config import get_secret, known_secret_values, redact
from core.generation import jobs, run_progress, runs
from core.generation.llm import config_from_model
from core.generation.providers import PROVIDERS, get_provider
from core.generation.providers.base import ChatMessage, ModelConfig, ProviderError
from core.store.db import saved_id, select_columns
from core.store.first_start_state import first_start_pending
from core.store.model_settings import check_settings
from core.store.models import Model, Run
from core.store.run_kinds import build_interrupted

PREFLIGHT_PROMPT = "Reply with the single word OK."
PREFLIGHT_MAX_TOKENS = 16
PREFLIGHT_TIMEOUT_S = 20.0
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_ENDPOINTS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
DEFAULT_VARIABLES = {  # provider -> (key variable, endpoint variable) used when the model names none
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    "openai_compatible": (None, None),
}
ACTIVE_STATUSES = ("pending", "running", runs.CANCEL_REQUEST)


@dataclass(frozen=True)
class Variable:
    """An environment variable (or secrets.toml entry) a model reads: its name, what it holds, whether it is set."""

    name: str
    purpose: str  # "API key" | "endpoint URL"
    required: bool
    present: bool

    def describe(self) -> str:
        state = "set" if self.present else ("NOT SET" if self.required else "not set (default endpoint)")
        return f"{self.name} ({self.purpose}): {state}"


def model_variables(config: ModelConfig) -> list[Variable]:
    """The variables `config` reads. Keys of openai/anthropic are required; an openai_compatible model needs its
    endpoint variable (settings base_url_env) unless it names a fixed base_url, and the key variable it names."""
    if config.provider not in DEFAULT_VARIABLES:
        return []
    default_key, default_url = DEFAULT_VARIABLES[config.provider]
    key_name = str(config.settings.get("api_key_env") or default_key or "")
    url_name = str(config.settings.get("base_url_env") or default_url or "")
    url_required = config.provider == "openai_compatible" and not config.settings.get("base_url")
    found = [Variable(key_name, "API key", True, bool(get_secret(key_name)))] if key_name else []
    if url_name:
        found.append(Variable(url_name, "endpoint URL", url_required, bool(get_secret(url_name))))
    return found


def missing_variables(config: ModelConfig) -> list[str]:
    """What keeps `config` from being called: unset required variables, or an openai_compatible model that names
    no endpoint at all."""
    if config.provider == "openai_compatible" and not (config.settings.get("base_url")
                                                       or config.settings.get("base_url_env")):
        return ["an endpoint: set 'Endpoint URL' (settings base_url) or 'Endpoint URL variable' (settings base_url_env)"]
    return [f"{v.name} ({v.purpose})" for v in model_variables(config) if v.required and not v.present]


def model_configs(engine: Engine) -> list[ModelConfig]:
    """Every registered model's configuration, by name."""
    with Session(engine) as session:
        return [config_from_model(m) for m in session.exec(select(Model).order_by(col(Model.name))).all()]


def model_config(engine: Engine, name: str) -> ModelConfig | None:
    """The configuration of the model called `name`, if registered."""
    return next((c for c in model_configs(engine) if c.name == name), None)


def check_model(config: ModelConfig) -> None:
    """Raise ValueError naming the field when a model configuration cannot be registered."""
    if not config.name.strip():
        raise ValueError("name: required")
    if config.name.startswith("baseline:") and config.provider != "baseline":
        raise ValueError("name: 'baseline:' names are reserved for the offline baselines")
    PROVIDERS.get(config.provider)
    for setting in ("base_url_env", "api_key_env"):
        value = config.settings.get(setting)
        if value and not ENV_NAME.fullmatch(str(value)):
            raise ValueError(f"{setting}: {value!r} is not a variable name (letters, digits and _)")
    if config.settings.get("base_url"):
        check_endpoint_url(str(config.settings["base_url"]))
        if config.settings.get("base_url_env"):
            raise ValueError("base_url: give the endpoint URL or the variable that holds it, not both")
    if config.max_output_tokens < 1:
        raise ValueError("max_output_tokens: at least 1")
    check_settings(config.settings)


def check_endpoint_url(url: str) -> None:
    """Raise ValueError unless `url` is an http(s) endpoint with a host and nothing secret in it (no user or
    password, no query string: credentials go into the key variable)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"base_url: {url!r} must start with http:// or https://")
    if not parts.hostname:
        raise ValueError(f"base_url: {url!r} has no host")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ValueError("base_url: no user, password, query or fragment in the URL; put credentials in the API key "
                         "variable")
    try:
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError as error:
        raise ValueError(f"base_url: {url!r} has an invalid port") from error


@dataclass(frozen=True)
class Preflight:
    """The answer of one model to a tiny test call: reachable or not, why, and how long it took."""

    model: str
    ok: bool
    message: str
    latency_ms: float | None = None


def endpoint_of(config: ModelConfig, secrets: list[str] | None = None) -> str:
    """The endpoint `config` calls (its fixed base_url, the variable's value, or the provider's default), secrets
    redacted (`secrets` as in core.config.redact)."""
    if config.settings.get("base_url"):
        return str(config.settings["base_url"])
    _, default_url = DEFAULT_VARIABLES.get(config.provider, (None, None))
    name = config.settings.get("base_url_env") or default_url
    return redact((get_secret(str(name)) if name else None) or DEFAULT_ENDPOINTS.get(config.provider, "(none)"), secrets)


def explain(error: ProviderError, config: ModelConfig) -> str:
    """A provider error in words a user can act on."""
    where, what = endpoint_of(config), str(error)
    key = next((v.name for v in model_variables(config) if v.purpose == "API key"), "the API key variable")
    if error.kind == "connection":
        return f"cannot reach {where} ({what}); is the server up, and is the endpoint variable right?"
    if error.kind == "timeout":
        return f"no answer from {where} within {PREFLIGHT_TIMEOUT_S:.0f} s"
    if error.kind in ("http_401", "http_403"):
        return f"{where} refused the key in {key} ({what})"
    if error.kind == "http_404":
        return f"model {config.model_name!r} or its API path not found at {where} ({what})"
    return f"{what} (calling {where})"


async def _preflight_one(config: ModelConfig) -> Preflight:
    if config.provider == "baseline":
        return Preflight(config.name, True, "offline baseline: nothing to call")
    missing = missing_variables(config)
    if missing:
        return Preflight(config.name, False, f"not set: {', '.join(missing)} (environment or .streamlit/secrets.toml)")
    probe = config.model_copy(update={
        "max_output_tokens": min(config.max_output_tokens, PREFLIGHT_MAX_TOKENS),
        "settings": {**config.settings, "timeout_s": min(float(config.settings.get("timeout_s") or PREFLIGHT_TIMEOUT_S),
                                                          PREFLIGHT_TIMEOUT_S)}})
    started = time.perf_counter()
    provider = None
    try:
        provider = get_provider(probe)
        await provider.complete([ChatMessage(role="user", content=PREFLIGHT_PROMPT)])
    except ProviderError as error:
        if error.kind == "rate_limit":
            return Preflight(config.name, True, f"reachable but rate-limited now ({error}); the run backs off and retries")
        return Preflight(config.name, False, explain(error, config))
    finally:
        if provider is not None and hasattr(provider, "aclose"):
            await provider.aclose()
    latency = (time.perf_counter() - started) * 1000
    return Preflight(config.name, True, f"answered in {latency:.0f} ms", latency)


async def preflight_configs(configs: list[ModelConfig]) -> list[Preflight]:
    """One tiny call per configuration, concurrently, in the given order."""
    return list(await asyncio.gather(*(_preflight_one(c) for c in configs)))


def judge_models(judges: list[str]) -> list[str]:
    """The registered models behind LLM judge ids (llm:<name> and llm:<name>@single)."""
    return [j.removeprefix("llm:").split("@", 1)[0] for j in judges if j.startswith("llm:")]


def reap_when_done(job: int | subprocess.Popen, poll_s: float = 1.0) -> threading.Thread:
    """Reap a background process we started (a pid launched through core.generation.jobs, or a Popen) once it
    exits, from a daemon thread, so that no zombie process is left behind."""
    def running() -> bool:
        return job.poll() is None if isinstance(job, subprocess.Popen) else jobs.process_alive(job)

    def wait() -> None:
        while running():
            time.sleep(poll_s)

    thread = threading.Thread(target=wait, name="reap-job", daemon=True)
    thread.start()
    return thread


def job_alive(engine: Engine, run_id: int) -> bool:
    """Whether a process is executing the run right now (its live owner, else the process last launched for it)."""
    with Session(engine) as session:
        config = dict(runs.get_run(session, run_id).config or {})
    return jobs.process_alive(jobs.executor_pid(engine, run_id, config))


def outcome(snapshot: run_progress.RunProgress, lines: list[jobs.StageLine]) -> str:
    """What happened to a run, honestly: done, done with failures, failed (every item failed), cancelled, stopped
    at the budget, or while it lasts waiting / generating / scoring / cancelling; 'stopped' when its process ended
    before it finished."""
    if any(line.state == "stopped" for line in lines):
        return "stopped (its process ended before the run finished)"
    status = snapshot.status
    if status in ("pending", "running", runs.CANCEL_REQUEST):
        return {"pending": "waiting to start", "running": "generating", runs.CANCEL_REQUEST: "cancelling"}[status]
    if status == "cancelled":
        return "cancelled"
    if status == "budget_stopped":
        return "stopped at the budget"
    if (snapshot.total and snapshot.failed == snapshot.total) or status == "failed":
        return "failed"
    if any(line.stage == "scoring" and line.state in ("waiting", "running") for line in lines):
        return "scoring"
    return "done with failures" if snapshot.failed else "done"


Progress = dict[int, tuple[run_progress.RunProgress, list[jobs.StageLine]]]  # run id -> what outcome() was decided from


def build_outcome(engine: Engine, run_id: int) -> str | None:
    """How a build's spend row's build ended (building, build done, stopped at the budget, failed, or interrupted
    when its process is gone: read only); None for an evaluation run."""
    with Session(engine) as session:
        run = runs.get_run(session, run_id)
    return row_build_outcome(engine, run)


def row_build_outcome(engine: Engine, run: Run) -> str | None:
    """build_outcome of a run row just read."""
    if not runs.is_build(run):
        return None
    return runs.BUILD_INTERRUPTED if build_interrupted(engine, run) else runs.BUILD_OUTCOMES.get(run.status, run.status)


def run_outcome(engine: Engine, run_id: int, read: Progress | None = None) -> str:
    """outcome() of one run, read from the database; a build's spend row says how its build ended (build_outcome):
    it has no responses to generate or score. `read` keeps the snapshot and stage lines it was decided from (a page
    that draws them next need not read them again)."""
    with Session(engine) as session:
        run = runs.get_run(session, run_id)
    build = row_build_outcome(engine, run)
    if build is not None:
        return build
    return _decided(engine, run, run_progress.progress_snapshot(engine, run_id), read)


def _decided(engine: Engine, run: Run, snapshot: run_progress.RunProgress, read: Progress | None) -> str:
    """outcome() of an evaluation run from its row and progress snapshot, kept in `read` (as in run_outcome)."""
    lines = jobs.pipeline_progress(engine, saved_id(run), snapshot, run.config)
    if read is not None:
        read[saved_id(run)] = (snapshot, lines)
    return outcome(snapshot, lines)


def run_choices(engine: Engine, limit: int = 20, read: Progress | None = None) -> list[tuple[int, str]]:
    """The most recent runs, newest first, as (id, 'run N · name · outcome'); `read` as in run_outcome. The runs are
    read in one query and their items counted in one more (run_progress.progress_snapshots), not run by run."""
    recent = runs.recent_runs(engine, limit)
    snapshots = run_progress.progress_snapshots(engine, [r for r in recent if not runs.is_build(r)])
    return [(saved_id(r), " · ".join(p for p in (f"run {r.id}", r.name, _listed_outcome(engine, r, snapshots, read))
                                     if p)) for r in recent]


def _listed_outcome(engine: Engine, run: Run, snapshots: dict[int, run_progress.RunProgress],
                    read: Progress | None) -> str:
    """The outcome run_choices lists for a run row: its build's, else decided from its snapshot."""
    build = row_build_outcome(engine, run)
    return build if build is not None else _decided(engine, run, snapshots[saved_id(run)], read)


def active_runs(engine: Engine, states: Sequence[tuple[int, str, str | None, dict | None]] | None = None) -> list[int]:
    """Runs whose background job is generating or scoring right now (their process is alive), and unfinished
    first-start runs; from the runs' (id, status, message, config) `states` a page has read (readmodel.run_states),
    else read here."""
    if states is not None:
        rows = [(run_id, status, config) for run_id, status, _, config in states]
    else:
        with engine.connect() as conn:  # every results page asks on every run: a plain connection, no ORM session
            rows = list(conn.execute(select_columns(Run.id, Run.status, Run.config)).all())
    active = []
    for run_id, status, config in rows:
        config = config or {}
        stage = (config.get("pipeline") or {}).get("stage")
        working = status in ACTIVE_STATUSES or stage in ("generation", "scoring")
        first_start = first_start_pending(config)
        if first_start or (working and jobs.process_alive(jobs.executor_pid(engine, int(run_id), config))):
            active.append(int(run_id))
    return active


def model_rows(configs: list[ModelConfig]) -> list[dict[str, Any]]:
    """One row per registered model (model_configs) for the app: provider, API model, endpoint and key variables and
    whether they are set, and what is missing."""
    secrets = known_secret_values()  # once for every row's endpoint
    return [{"model": c.name, "provider": c.provider, "API model": c.model_name,
             "endpoint": endpoint_of(c, secrets) if c.provider != "baseline" else "offline",
             "variables": "; ".join(v.describe() for v in model_variables(c)) or "none",
             "missing": ", ".join(missing_variables(c)) if c.provider != "baseline" else ""}
            for c in configs]
