"""Registered models: looked up by name, registered or updated (settings never hold secrets), the offline
baselines, and the checks a run makes on its models (prices, deployed answers)."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from core.generation.baselines import BASELINES
from core.generation.providers.base import ModelConfig
from core.generation.providers.prices import price_errors
from core.store.model_settings import check_settings
from core.store.models import Model


def resolve_models(session: Session, names: list[str]) -> list[Model]:
    """Model rows by name, in the given order; unknown names raise ValueError listing the registered ones."""
    rows = {m.name: m for m in session.exec(select(Model))}
    missing = [n for n in names if n not in rows]
    if missing:
        raise ValueError(f"unknown model(s) {', '.join(missing)}; registered: {', '.join(sorted(rows)) or '(none)'}")
    return [rows[n] for n in names]


def check_generators(models: list[Model]) -> None:
    """Refuse models that hold a deployed system's imported answers (provider 'deployed'): they cannot answer."""
    deployed = [m.name for m in models if m.provider == "deployed"]
    if deployed:
        raise ValueError(f"{', '.join(deployed)} holds a deployed system's imported answers and cannot answer new "
                         "prompts; run candidate models on its set instead")


def register_model(engine: Engine, config: ModelConfig) -> Model:
    """Insert or update the Model row for `config`; settings may name env vars but never hold secrets."""
    check_settings(config.settings)
    problems = price_errors(config.price_input_per_mtok, config.price_output_per_mtok)
    if problems:
        raise ValueError(f"model {config.name}: " + "; ".join(problems))
    fields = config.model_dump(exclude={"name"})
    with Session(engine) as session:
        row = session.exec(select(Model).where(Model.name == config.name)).first() or Model(name=config.name, provider=config.provider)
        for key, value in fields.items():
            setattr(row, key, value)
        session.add(row)
        session.commit()
        session.refresh(row)
        return row


def ensure_baselines(engine: Engine) -> list[Model]:
    """Register the no-network baselines (baseline:always-refuse, baseline:extractive) as Model rows."""
    return [
        register_model(engine, ModelConfig(name=name, provider="baseline", model_name=name, is_baseline=True,
                                           access="open", temperature=None, max_output_tokens=512))
        for name in BASELINES
    ]


def model_names(engine: Engine) -> list[str]:
    """Registered model names, baselines included."""
    with Session(engine) as session:
        return sorted(session.exec(select(Model.name)).all())


def check_prices(models: list[Model]) -> None:
    """Refuse models whose stored prices are negative or not finite (a run could never be budgeted)."""
    problems = [f"model {m.name}: {p}" for m in models
                for p in price_errors(m.price_input_per_mtok, m.price_output_per_mtok)]
    if problems:
        raise ValueError("; ".join(problems) + " (fix it with gauntlet models add NAME --price-in/--price-out)")
