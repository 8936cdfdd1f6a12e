"""SQLModel tables: the benchmark (domains, instances, constraints, documents), runs, verdicts and human labels."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, LargeBinary, Text, UniqueConstraint, event, true
from sqlalchemy import text as sql_text
from sqlmodel import Field, SQLModel

from core.plugins import DEFAULT_PROTOCOL


def utc_now() -> datetime:
    """Current time in UTC (naive-free)."""
    return datetime.now(UTC)


class Domain(SQLModel, table=True):
    """A vertical domain of the benchmark (Energy, Medical, ...); domains are data, not code."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    description: str = ""


class Instance(SQLModel, table=True):
    """One version of a benchmark instance; edits create a new row with version+1, the old one stays."""

    __table_args__ = (UniqueConstraint("uid", "version", name="uq_instance_uid_version"),)

    id: int | None = Field(default=None, primary_key=True)
    uid: str = Field(index=True, description="External instance id from the interchange file.")
    version: int = 1
    is_latest: bool = Field(default=True, index=True)
    domain_id: int = Field(foreign_key="domain.id", index=True)
    query: str = Field(sa_column=Column(Text, nullable=False))
    mode: str | None = Field(default=None, index=True)
    origin: str = "natural"
    protocol: str = Field(default=DEFAULT_PROTOCOL, index=True)
    status: str = Field(default="unverified", index=True)
    language: str | None = Field(default=None, index=True)
    reference: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    attributes: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))
    meta: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utc_now)
    created_by: str = ""


class Constraint(SQLModel, table=True):
    """An atomic instruction of an instance's fused instruction set, ordered by position."""

    id: int | None = Field(default=None, primary_key=True)
    instance_id: int = Field(foreign_key="instance.id", index=True)
    position: int
    cid: str = Field(description="Constraint id within the instance, e.g. 'c3'.")
    text: str = Field(sa_column=Column(Text, nullable=False))
    category: str = Field(index=True)
    sub_dimension: str = Field(index=True)
    judge_method: str
    checker_id: str | None = None
    checker_kwargs: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    criterion: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    precondition: str | None = None


class Document(SQLModel, table=True):
    """A document in an instance's bundle, ordered by position, with its role in that bundle."""

    id: int | None = Field(default=None, primary_key=True)
    instance_id: int = Field(foreign_key="instance.id", index=True)
    position: int
    doc_uid: str = Field(index=True, description="Stable document id; one document may serve several instances.")
    title: str
    text: str = Field(sa_column=Column(Text, nullable=False))
    source: str = ""
    content_type: str = "text"
    role: str
    conflict_group: str | None = None
    conflict_summary: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    variant: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))


class Model(SQLModel, table=True):
    """A generator or judge model configuration; keys and endpoints never live here, only env var names."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True, description="Display name, e.g. 'gpt-4.1' or 'baseline:always-refuse'.")
    provider: str = Field(description="Provider registry name: openai | anthropic | openai_compatible | baseline.")
    model_name: str = ""
    paradigm: str = "standard"
    access: str = "closed"
    is_baseline: bool = False
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0
    temperature: float | None = 0.0
    max_output_tokens: int = 1024
    context_window: int | None = Field(default=None, description="Tokens the model accepts (prompt + output).")
    settings: dict[str, Any] = Field(
        default_factory=dict,
        sa_column=Column(JSON, nullable=False),
        description="Provider extras: reasoning effort, thinking budget, base_url_env, api_key_env (names only).",
    )
    created_at: datetime = Field(default_factory=utc_now)


class Run(SQLModel, table=True):
    """An evaluation run: generators x instances, then judges; config and code version recorded."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = ""
    status: str = Field(default="pending", index=True, description="pending | running | done | failed | cancelled | budget_stopped")
    config: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    code_version: str = ""
    budget_usd: float | None = None
    spent_usd: float = 0.0
    reserved_usd: float = Field(default=0.0, description="Estimated cost of the calls in flight (reserved before sending).")
    rebought_calls: int = Field(default=0, description="Calls in flight when an executor died: their answers were lost, so bought again.")
    rebought_usd: float = Field(default=0.0, description="The reserved (upper-bound) cost of those re-bought calls.")
    message: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    created_at: datetime = Field(default_factory=utc_now)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    heartbeat_at: datetime | None = None
    hidden_at: datetime | None = Field(default=None, description="When an admin hid (archived) the run: it leaves "
                                       "every list and picker and stays in the database.")
    hidden_by: str = Field(default="", sa_column_kwargs={"server_default": ""}, description="Who hid the run.")


class Response(SQLModel, table=True):
    """One generator answer for one (run, model, instance, condition, repeat); every item ends done or failed with a
    reason."""

    __table_args__ = (UniqueConstraint("run_id", "model_id", "instance_id", "condition", "repeat",
                                       name="uq_response_item"),
                      # a run's progress (counts by status and cache hit) from the index alone
                      Index("ix_response_run_status", "run_id", "status", "cached"))

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="run.id", index=True)
    model_id: int = Field(foreign_key="model.id", index=True)
    instance_id: int = Field(foreign_key="instance.id", index=True)
    condition: str = Field(default="", index=True, description="The protocol condition the prompt was built under.")
    repeat: int = Field(default=0, sa_column_kwargs={"server_default": "0"},
                        description="Which of the run's --repeats answers to this item (0 = the first; its own seed "
                                    "and cache key from 1 on).")
    status: str = Field(default="pending", index=True, description="pending | done | failed")
    text: str | None = Field(default=None, sa_column=Column(Text, nullable=True),
                             description="The answer alone: reasoning blocks are kept in `reasoning`.")
    reasoning: str | None = Field(default=None, sa_column=Column(Text, nullable=True),
                                  description="The model's reasoning (thinking blocks, provider reasoning fields).")
    reasoning_state: str = Field(default="none", sa_column_kwargs={"server_default": "none"},
                                 description="none | finished | unfinished (reasoning not finished: no answer)")
    reasoning_tokens: int = Field(default=0, sa_column_kwargs={"server_default": "0"},
                                  description="Output tokens spent on reasoning (within output_tokens).")
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    attempts: int = 0
    cache_key: str | None = Field(default=None, index=True)
    cached: bool = False
    latency_ms: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    reserved_usd: float | None = Field(default=None, description="Estimated cost reserved while its call is in flight (None: no call in flight).")
    prompt_meta: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utc_now)
    finished_at: datetime | None = None


class LLMCall(SQLModel, table=True):
    """Content-addressed cache of every paid LLM call (provider, model, parameters, messages)."""

    key: str = Field(primary_key=True, description="sha256 of the canonical request.")
    provider: str
    model_name: str
    request: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    text: str = Field(sa_column=Column(Text, nullable=False))
    reasoning: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    reasoning_tokens: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    finish_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    purpose: str = Field(default="generate", description="generate | judge:<name> | build:<step>")
    created_at: datetime = Field(default_factory=utc_now)


class Verdict(SQLModel, table=True):
    """One judgement of a response: a constraint verdict or a metric value, with its judge, method and reason."""

    __table_args__ = (Index("ix_verdict_lookup", "response_id", "metric", "judge"),
                      Index("ix_verdict_run_judge", "run_id", "judge"),  # a run's judges by index seeks
                      # a run's judging spend from its paid verdicts only (core.generation.run_progress.run_spend)
                      Index("ix_verdict_paid", "run_id", "cost_usd", sqlite_where=sql_text("cost_usd != 0"),
                            postgresql_where=sql_text("cost_usd != 0")))

    id: int | None = Field(default=None, primary_key=True)
    response_id: int = Field(foreign_key="response.id", index=True)
    run_id: int = Field(foreign_key="run.id", index=True)
    judge: str = Field(index=True, description="'rule', 'heuristic', or 'llm:<model name>'.")
    metric: str = Field(
        index=True,
        description="constraint | faithfulness | coverage | rejection | conflict_recognition | refusal",
    )
    constraint_id: int | None = Field(default=None, foreign_key="constraint.id", index=True)
    status: str = Field(default="ok", description="ok | error | not_applicable | unparseable")
    passed: bool | None = None
    value: float | None = None
    method: str = Field(default="", description="rule | single | batched | heuristic | precondition")
    reason: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    calls: int = 0
    cost_usd: float = 0.0
    created_at: datetime = Field(default_factory=utc_now)


class ResponseScore(SQLModel, table=True):
    """Per-response constraint counts and judge cost of one judge's verdicts (plus rule verdicts), for the results pages.

    The response-level metric values live in response_metric (one row per metric, with its state).
    """

    __tablename__ = "response_score"

    response_id: int = Field(foreign_key="response.id", primary_key=True)
    judge: str = Field(primary_key=True)
    run_id: int = Field(foreign_key="run.id", index=True)
    n: int = 0
    judged: int = 0
    passed: int = 0
    errors: int = 0
    judged_persona: int = 0
    passed_persona: int = 0
    judged_output: int = 0
    passed_output: int = 0
    judged_knowledge_protocol: int = 0
    passed_knowledge_protocol: int = 0
    judge_calls: int = 0
    judge_cost_usd: float = 0.0


class ResponseMetric(SQLModel, table=True):
    """One response-level metric of one response under one judge, any protocol: its value and its state.

    State is one of core.metrics.STATES: a verdict's status mapped by core.metrics.VERDICT_STATES, or, with no
    verdict, 'unjudged' (the judge has not scored it) or 'skipped' (deliberately not computed; docs/metrics.md).
    `value` is the verdict's stored value; the read model counts it when the metric's declaration counts the state.
    """

    __tablename__ = "response_metric"
    __table_args__ = (Index("ix_response_metric_run_judge", "run_id", "judge"),)

    response_id: int = Field(foreign_key="response.id", primary_key=True)
    judge: str = Field(primary_key=True)
    metric: str = Field(primary_key=True)
    run_id: int = Field(foreign_key="run.id")
    value: float | None = None
    state: str = Field(description="scored | not_applicable | unparseable | judge_error | unjudged | skipped")


class FailureCount(SQLModel, table=True):
    """Constraint verdict counts of one run and judge per model, domain, mode, category and sub-dimension (Figure 4 data)."""

    __tablename__ = "failure_count"
    __table_args__ = (Index("ix_failure_count_run_judge", "run_id", "judge"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="run.id")
    judge: str
    model_id: int = Field(foreign_key="model.id")
    domain_id: int = Field(foreign_key="domain.id")
    mode: str
    category: str
    sub_dimension: str
    verdicts: int = 0
    decided: int = 0
    failed: int = 0
    not_applicable: int = 0  # the undetermined verdicts by status, and the constraints with no verdict (unjudged)
    unparseable: int = 0
    judge_errors: int = 0
    skipped: int = 0
    unjudged: int = 0


class FailureModeCount(SQLModel, table=True):
    """failure_count summed over the domains: constraint verdict counts of one run and judge per model, mode, category
    and sub-dimension (Figure 4 over every domain, a sixth of failure_count's rows). Written by the summarise stage
    from the failure_count rows it has just written, in the same transaction (core.scoring.summaries)."""

    __tablename__ = "failure_mode_count"
    # the groups' order: SQLite sums a run's rows per model, mode and category off the index, with no sort
    __table_args__ = (Index("ix_failure_mode_count_run_judge", "run_id", "judge", "model_id", "mode", "category"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="run.id")
    judge: str
    model_id: int = Field(foreign_key="model.id")
    mode: str
    category: str
    sub_dimension: str
    verdicts: int = 0
    decided: int = 0
    failed: int = 0
    not_applicable: int = 0
    unparseable: int = 0
    judge_errors: int = 0
    skipped: int = 0
    unjudged: int = 0


class MetricAggregate(SQLModel, table=True):
    """Response-level metric rows of one run and judge summed per model, protocol, condition (mode), domain, language,
    origin (natural, augmented), knowledge protocol (has_protocol: 1 when a knowledge-protocol constraint applies in
    the instance's mode), metric and state, over the run's done responses: how many responses, how many counted values, their sum and sum of
    squares. Written by the summarise stage with response_metric in one transaction (core.scoring.summaries)."""

    __tablename__ = "metric_aggregate"
    __table_args__ = (Index("ix_metric_aggregate_run_judge", "run_id", "judge"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="run.id")
    judge: str
    model_id: int = Field(foreign_key="model.id")
    protocol: str
    mode: str
    domain_id: int = Field(foreign_key="domain.id")
    language: str
    origin: str = ""
    has_protocol: int = 0
    metric: str
    state: str
    responses: int = 0
    n_values: int = 0
    total: float = 0.0
    total_sq: float = 0.0


class ResponseScoreState(SQLModel, table=True):
    """Which verdicts a run's summaries for one judge (response_score, response_metric, failure_count) were built from: their count and max id, and the run's verdict change counter then."""

    __tablename__ = "response_score_state"

    run_id: int = Field(foreign_key="run.id", primary_key=True)
    judge: str = Field(primary_key=True)
    verdicts: int = 0
    max_verdict_id: int = 0
    verdict_changes: int = -1  # run_verdict_count.changes when built (-1: stale)


class ResponsePack(SQLModel, table=True):
    """One run's per-response scores read for one judge (the columns core.analysis.readmodel.responses' scores
    statement fetches, by that statement), packed: float64 cells row-major, `rows` x the comma-separated column `names`, of
    the done responses of the constraint protocols named in `protocols`. Written by the summarise stage with the other
    summaries in one transaction; response_scores reads it where every run's summaries are current and packed."""

    __tablename__ = "response_pack"

    run_id: int = Field(foreign_key="run.id", primary_key=True)
    judge: str = Field(primary_key=True)
    protocols: str = ""
    names: str = ""
    rows: int = 0
    cells: bytes = Field(default=b"", sa_column=Column(LargeBinary, nullable=False))


class RunVerdictCount(SQLModel, table=True):
    """A run's verdicts and their change counter (each verdict inserted, deleted or moved adds one), kept by triggers
    on verdict (migration 0030): what stale_summary_runs compares a run's build states with, one row per run."""

    __tablename__ = "run_verdict_count"

    run_id: int = Field(primary_key=True)
    verdicts: int = 0
    changes: int = 0


class ContextClaims(SQLModel, table=True):
    """Core and supplementary claims extracted once per (instance, judge) and reused for every model's response."""

    __table_args__ = (UniqueConstraint("instance_id", "judge", name="uq_context_claims"),)

    id: int | None = Field(default=None, primary_key=True)
    instance_id: int = Field(foreign_key="instance.id", index=True)
    judge: str
    status: str = "ok"
    core: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    supplementary: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    error: str | None = None
    calls: int = 0
    created_at: datetime = Field(default_factory=utc_now)


class User(SQLModel, table=True):
    """An account: admin | expert | analyst | viewer; experts have assigned domains."""

    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(index=True, unique=True)
    display_name: str = ""
    email: str | None = Field(default=None, index=True)
    role: str = "viewer"
    domains: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    password_hash: str = ""
    active: bool = True
    created_at: datetime = Field(default_factory=utc_now)
    version: int = Field(default=1, description="Bumped by every account edit; a save carries the version it read.")
    changed_by: str = Field(default="", description="Who made the latest account edit.")
    changed_at: datetime | None = Field(default=None, description="When the latest account edit was made.")


class Annotation(SQLModel, table=True):
    """An append-only human label: who, when, under which guidelines version; never updated or deleted."""

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(index=True, description="verification | gold_label | adjudication")
    target_type: str = Field(description="instance | response")
    target_id: int = Field(index=True)
    response_id: int | None = Field(default=None, foreign_key="response.id", index=True,
                                    description="= target_id for a response label: deleting the response is refused.")
    author: str = Field(index=True)
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    guidelines_version: str = ""
    client_token: str | None = Field(default=None, unique=True, description="Idempotency key: a double submit is stored once.")
    created_at: datetime = Field(default_factory=utc_now)


@event.listens_for(Annotation, "before_insert")
def _link_response(_mapper, _connection, target: Annotation) -> None:
    """A label on a response references it by foreign key, whichever path writes it (the delete of a labelled response
    is refused, and so is a label on a response already deleted)."""
    if target.target_type == "response":
        target.response_id = target.target_id


class Assignment(SQLModel, table=True):
    """Work assigned to an expert: an instance to verify or a response to label."""

    __table_args__ = (UniqueConstraint("kind", "target_id", "assignee", name="uq_assignment"),)

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(index=True, description="verification | gold_label")
    target_id: int = Field(index=True)
    assignee: str = Field(index=True)
    batch: str = ""
    probability: float | None = Field(default=None, description="Inclusion probability of a gold-sampled response in its draw.")
    blind: bool = Field(default=True, sa_column_kwargs={"server_default": true()},
                        description="gold_label: the model stays hidden from the expert until they save a label.")
    queue_seed: int | None = Field(default=None, description="The seed of the shuffle that ordered the sample's queues.")
    queue_position: int | None = Field(default=None, description="Place in the expert's queue (seeded shuffle across models).")
    created_at: datetime = Field(default_factory=utc_now)


class LoginFailure(SQLModel, table=True):
    """Sign-in attempts counted per account (normalised name) or client address in the current window, to throttle
    guessing: an attempt is counted before its password is checked, and a successful one is taken back."""

    __tablename__ = "login_failure"
    __table_args__ = (UniqueConstraint("scope", "key", name="uq_login_failure_scope_key"),)

    id: int | None = Field(default=None, primary_key=True)
    scope: str = Field(index=True, description="account | address")
    key: str = Field(index=True, description="The casefolded username, or the client address.")
    at: datetime = Field(default_factory=utc_now, index=True, description="When the current window started.")
    failures: int = Field(default=0, description="Attempts counted in the window (checked or being checked).")


class BenchmarkSet(SQLModel, table=True):
    """A named set of benchmark instances: one import or one build, so benchmarks are compared set by set."""

    __tablename__ = "benchmark_set"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    description: str = ""
    origin: str = Field(default="import", description="import | build")
    source: str = Field(default="", description="The file the set was imported from.")
    created_at: datetime = Field(default_factory=utc_now)
    created_by: str = ""


class BenchmarkSetMember(SQLModel, table=True):
    """An instance version that belongs to a benchmark set."""

    __tablename__ = "benchmark_set_member"

    set_id: int = Field(foreign_key="benchmark_set.id", primary_key=True)
    instance_id: int = Field(foreign_key="instance.id", primary_key=True, index=True)


class SessionToken(SQLModel, table=True):
    """A signed-in browser session, or the one-minute code that hands a sign-in to the cookie endpoint; only the
    SHA-256 of the secret part is stored. Revoked on sign-out and when the account's role or password changes."""

    __tablename__ = "session_token"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(default="session", description="session | handoff")
    username: str = Field(index=True)
    token_hash: str = Field(index=True, unique=True)
    created_at: datetime = Field(default_factory=utc_now)
    expires_at: datetime
    last_seen: datetime = Field(default_factory=utc_now)
    revoked_at: datetime | None = None
    revoked_reason: str = ""
    bound_to: str = Field(default="", description="Handoff: SHA-256 of the sign-in nonce of the browser it is for.")


class AccountChange(SQLModel, table=True):
    """The audit log of account changes: who changed which field of whose account, when, from what to what."""

    __tablename__ = "account_change"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = Field(default_factory=utc_now, index=True)
    actor: str = Field(index=True, description="The admin (or 'cli') who made the change.")
    username: str = Field(index=True, description="The account changed.")
    field: str = Field(description="created | role | domains | active | email | password")
    before: str = ""
    after: str = ""


class AppSecret(SQLModel, table=True):
    """A server-side secret generated once (the session-signing key), shared by every app process of a database."""

    __tablename__ = "app_secret"

    name: str = Field(primary_key=True)
    value: str
    created_at: datetime = Field(default_factory=utc_now)


class Lease(SQLModel, table=True):
    """Who executes a run (or scores it with one judge) right now: one live holder at a time, kept by a heartbeat.

    Taken atomically (insert, or take over a row whose holder stopped renewing it or whose process is gone on this
    host); renewed and released only by the holding token. Every take-over raises `generation`, the fencing token:
    each write of a run executor checks its generation in the same transaction, so a holder whose lease was taken
    over writes nothing more. A released lease keeps its row (expired), so generations never repeat.
    """

    __tablename__ = "lease"

    name: str = Field(primary_key=True, description="'run:<run id>' or 'score:<run id>:<judge>'.")
    token: str = Field(description="Random id of this holding.")
    owner: str = Field(default="", description="Who holds it, for messages: 'pid 123 on host (gauntlet run)'.")
    host: str = ""
    pid: int = 0
    acquired_at: float = Field(default=0.0, description="Unix time the holder took it.")
    expires_at: float = Field(default=0.0, description="Unix time after which another executor may take it over.")
    generation: int = Field(default=1, sa_column_kwargs={"server_default": "1"},
                            description="Fencing token: 1 when first taken, one more at each take-over.")


class JudgeCheck(SQLModel, table=True):
    """One check of a judge: its figures against a human-labelled suite ('suite') or one bias probe ('probe:<name>'),
    with the judge's version (model and prompt hash) so a later check of a changed judge is a new row."""

    __tablename__ = "judge_check"
    __table_args__ = (Index("ix_judge_check_judge", "judge", "kind"),)

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(description="'suite' or 'probe:repeat' / 'probe:position' / 'probe:length' / 'probe:language'.")
    judge: str = Field(description="The judge id: 'heuristic' or 'llm:<model>'.")
    judge_model: str = Field(description="The model behind the judge ('heuristic' for the offline rules).")
    prompt_hash: str = Field(description="sha256 (12 hex) of the prompt texts (or rule source) the judge used.")
    suite: str
    n: int = Field(description="Pairs compared.")
    figures: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    fitness: str = ""
    created_at: datetime = Field(default_factory=utc_now)
