"""Pieces of the Run evaluation page: the models table and the register/edit form, preflight results, and the watch
panel of one run (honest outcome, both stages' progress, failures, retry and cancel), refreshed while it runs."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.generation import jobs, models_admin, run_archive, run_estimates, run_progress, run_scope, runs
from core.generation.providers.base import ModelConfig
from core.generation.providers.prices import default_price
from core.review.auth import Principal
from core.scoring.judges.names import judge_label
from core.services import runs as run_services
from ui.auth import guarded_write
from ui.confirm import confirm
from ui.result_links import redraw_page, rerun_on_new_outcome, results_links
from ui.session import engine

NEW_MODEL = "(register a new model)"
PROVIDERS = ("openai_compatible", "openai", "anthropic")
OUTCOME_ICONS = {"done": ":material/check_circle:", "done with failures": ":material/warning:",
                 "failed": ":material/error:", "cancelled": ":material/cancel:"}


def models_table(configs: list[ModelConfig]) -> None:
    """Every registered model (models_admin.model_configs) with the variables it reads and whether they are set."""
    rows = models_admin.model_rows(configs)
    if not rows:
        st.info("No model registered yet: register one below, or register the offline baselines.")
        return
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    missing = [r for r in rows if r["missing"]]
    for row in missing:
        st.warning(f"**{row['model']}** cannot be called: {row['missing']} not set. Set it in .streamlit/secrets.toml "
                   "(read again when the file changes: no restart) or in the app's environment (needs a restart). "
                   "Keys never go into the database.", icon=":material/key_off:")


def _config_from_form(name: str, base: ModelConfig | None, values: dict) -> ModelConfig:
    edited = ("base_url", "base_url_env", "api_key_env")
    settings = {k: v for k, v in (base.settings if base else {}).items() if k not in edited}
    settings |= {k: values[k].strip() for k in edited if values[k].strip()}
    model_name = values["model_name"].strip() or name
    price_in, price_out = values["price_in"], values["price_out"]
    if not base and not price_in and not price_out:
        price_in, price_out = default_price(model_name)
    return ModelConfig(name=name.strip(), provider=values["provider"], model_name=model_name,
                       paradigm=values["paradigm"], access=values["access"], temperature=values["temperature"],
                       max_output_tokens=int(values["max_output_tokens"]),
                       context_window=int(values["context_window"]) or None,
                       price_input_per_mtok=price_in, price_output_per_mtok=price_out, settings=settings)


def model_form(principal: Principal, registered: list[ModelConfig]) -> None:
    """Register a model or edit one (of the `registered` models_admin.model_configs): the form loads the chosen model's
    values; keys are referenced by variable name."""
    configs = {c.name: c for c in registered if c.provider != "baseline"}
    pick = st.selectbox("Model to register or edit", [NEW_MODEL, *configs], key="model_pick")
    base = configs.get(pick)
    suffix = "new" if base is None else pick
    with st.form(f"model_form_{suffix}", clear_on_submit=base is None):
        cols = st.columns(3)
        name = cols[0].text_input("Name", value=base.name if base else "", disabled=base is not None,
                                  key=f"model_name_{suffix}", help="How runs and leaderboards name it.")
        provider = cols[1].selectbox("Provider", PROVIDERS, key=f"model_provider_{suffix}",
                                     index=PROVIDERS.index(base.provider) if base and base.provider in PROVIDERS else 0,
                                     help="openai_compatible: vLLM, Ollama, llama.cpp, LM Studio, gateways.")
        values = {
            "provider": provider,
            "model_name": cols[2].text_input("API model id (empty: the name)", value=base.model_name if base else "",
                                             key=f"model_api_{suffix}"),
            "base_url": st.text_input(
                "Endpoint URL", value=str((base.settings if base else {}).get("base_url", "")),
                key=f"model_url_{suffix}", placeholder="http://127.0.0.1:8000/v1",
                help="The endpoint itself (not secret; http or https, no credentials in it). Takes effect at the next "
                "check or run, with no restart. Or leave it empty and name a variable that holds it."),
            "base_url_env": cols[0].text_input(
                "Endpoint URL variable", value=str((base.settings if base else {}).get("base_url_env", "")),
                key=f"model_url_env_{suffix}", help="Name of the environment variable (or secrets.toml entry) that "
                "holds the endpoint, e.g. VLLM_URL. Empty: the provider's default (OPENAI_BASE_URL, ...)."),
            "api_key_env": cols[1].text_input(
                "API key variable", value=str((base.settings if base else {}).get("api_key_env", "")),
                key=f"model_key_env_{suffix}", help="Name of the variable that holds the key, e.g. VLLM_KEY. Empty: "
                "OPENAI_API_KEY / ANTHROPIC_API_KEY. The key itself never goes into the database."),
            "paradigm": cols[2].selectbox("Paradigm", ["standard", "reasoning"], key=f"model_paradigm_{suffix}",
                                          index=1 if base and base.paradigm == "reasoning" else 0),
            "access": cols[0].selectbox("Access", ["closed", "open"], key=f"model_access_{suffix}",
                                        index=1 if base and base.access == "open" else 0),
            "temperature": cols[1].number_input("Temperature", 0.0, 2.0, float(base.temperature or 0.0) if base else 0.0,
                                                step=0.1, key=f"model_temperature_{suffix}"),
            "max_output_tokens": cols[2].number_input("Max output tokens", 1, 200_000,
                                                      base.max_output_tokens if base else 1024,
                                                      key=f"model_max_tokens_{suffix}"),
            "context_window": cols[0].number_input("Context window (0 = unchecked)", 0, 10_000_000,
                                                   (base.context_window or 0) if base else 0,
                                                   key=f"model_window_{suffix}"),
            "price_in": cols[1].number_input("USD per million input tokens", 0.0, 1000.0,
                                             base.price_input_per_mtok if base else 0.0, key=f"model_price_in_{suffix}",
                                             help="New model with both prices 0: the built-in price list."),
            "price_out": cols[2].number_input("USD per million output tokens", 0.0, 1000.0,
                                              base.price_output_per_mtok if base else 0.0,
                                              key=f"model_price_out_{suffix}"),
        }
        if st.form_submit_button("Save model", type="primary"):
            try:
                config = _config_from_form(name, base, values)
            except ValueError as error:
                st.error(f"Not saved: {error}", icon=":material/error:")
                return
            saved = guarded_write(lambda: run_services.save_model(engine(), principal, config))
            if saved:
                confirm(f"Saved model {config.name}.")
                st.session_state["run_model_missing"] = (config.name, models_admin.missing_variables(config))
                st.rerun()
    saved_name, missing = st.session_state.pop("run_model_missing", ("", []))
    if missing:
        st.warning(f"{saved_name} cannot be called yet: {', '.join(missing)} not set.", icon=":material/key_off:")


def scope_text(options: runs.RunOptions, choices: run_scope.ScopeChoices, estimate: run_estimates.Estimate,
               where: str) -> str:
    """The run's scope spelled out: protocols, set, the domains named (all of them counted), and the item count."""
    protocols = ", ".join(options.protocols) or f"all {len(choices.protocols)} protocols"
    domains = (f"all {len(choices.domains)} domains ({', '.join(choices.domains)})"
               if options.domains == list(choices.domains) else ", ".join(options.domains))
    return (f"{protocols} · {where} · {domains} · {estimate.instances} instances x "
            f"{len(estimate.by_condition) or 1} condition(s) x {len(options.models)} model(s) = {estimate.items} items")


def preflight_table(results: list[models_admin.Preflight]) -> None:
    """Each checked model: OK or the readable reason it cannot be called."""
    for result in results:
        if result.ok:
            st.success(f"{result.model}: {result.message}", icon=":material/check_circle:")
        else:
            st.error(f"{result.model}: {result.message}", icon=":material/error:")


def stage_text(run_id: int, label: str, line: jobs.StageLine) -> str:
    """One progress line's caption: the stage (the run and its outcome, or the judge's name), counts and state."""
    if line.judge is None:
        return f"Generation · run {run_id}: {label} - {line.done}/{line.total} ({line.state})"
    if line.state == "waiting" and not line.total:
        return f"Scoring with {judge_label(line.judge)}: waiting for generation"
    return f"Scoring with {judge_label(line.judge)}: {line.done}/{line.total} responses ({line.state})"


def watch_panel(principal: Principal, run_id: int, read: models_admin.Progress | None = None) -> None:
    """Outcome, progress of generation then scoring per judge, counts, failures with retry, and cancel; the snapshot
    and stage lines come from `read` when this run just read them (models_admin.run_choices), else fresh."""
    snap, lines = (read or {}).get(run_id) or (None, None)
    build = None  # an evaluation run: run_choices reads no progress for a build's spend row
    if snap is None or lines is None:
        snap = run_progress.progress_snapshot(engine(), run_id)
        lines = jobs.pipeline_progress(engine(), run_id, snap)
        build = models_admin.build_outcome(engine(), run_id)  # a build's spend row: its build's outcome, no cancel
    label = build or models_admin.outcome(snap, lines)
    rerun_on_new_outcome(run_id, label)
    icon = OUTCOME_ICONS.get(label, ":material/hourglass_top:")
    st.markdown(f"#### {icon} Run {run_id}: {label}")
    for line in lines:
        st.progress(line.fraction, text=stage_text(run_id, label, line))
    spend = run_progress.run_spend(engine(), run_id, snap.spent_usd)
    cols = st.columns(7)
    cols[0].metric("Done", snap.done)
    cols[1].metric("Failed", snap.failed)
    cols[2].metric("Pending", snap.pending)
    cols[3].metric("Generation spent", f"${spend.generation_usd:.4f}")
    cols[4].metric("Judging spent", f"${spend.judging_usd:.4f}", help="The recorded cost of every judge call on "
                   "this run's responses, every judge (a cached call costs nothing).")
    cols[5].metric("Spent (total)", f"${spend.total_usd:.4f}")
    cols[6].metric("ETA", f"{snap.eta_s:.0f} s" if snap.eta_s is not None and snap.status == "running" else "-")
    if build is None and snap.status in ("running", "pending", runs.CANCEL_REQUEST) and st.button("Cancel run", key=f"run_cancel_{run_id}"):
        status = guarded_write(lambda: run_services.stop_run(engine(), principal, run_id))
        if status:
            st.warning(f"Run {run_id}: {status}")
    failures = runs.failed_items(engine(), run_id)
    if failures:
        st.markdown(f"**{len(failures)} failed item(s)**, each with its reason:")
        st.dataframe(failures, hide_index=True)
        if st.button(f"Retry the {len(failures)} failed item(s)", key=f"run_retry_{run_id}",
                     icon=":material/replay:", disabled=models_admin.job_alive(engine(), run_id)):
            retried = guarded_write(lambda: run_services.retry_failed_items(engine(), principal, run_id))
            if retried:
                confirm(f"Run {run_id}: {retried[0]} item(s) back to pending; generating and scoring them in the "
                        f"background (process {retried[1]}).")
                redraw_page(run_id)
    results_links(run_id, label)


def hide_button(principal: Principal, run_id: int) -> None:
    """Hide the watched run (archived: out of every list and picker, kept in the database)."""
    read = run_archive.run_hidden_at(engine(), run_id)
    if (st.button(f"Hide run {run_id}", key=f"run_hide_{run_id}", icon=":material/visibility_off:",
                  help="Takes the run out of every list and picker; nothing is deleted and it can be shown again.")
            and guarded_write(lambda: run_services.hide_run(engine(), principal, run_id, True, read))):
        confirm(f"Run {run_id} hidden; it is listed under Hidden runs.")
        st.rerun()


def hidden_runs_panel(principal: Principal) -> None:
    """Hidden runs: show one again, or delete it after confirming exactly what goes."""
    hidden = run_archive.hidden_runs(engine())
    if not hidden:
        return
    with st.expander(f"Hidden runs ({len(hidden)})"):
        labels = {saved: f"run {saved} · {run.name or 'unnamed'} · hidden by {run.hidden_by}"
                  for run in hidden if (saved := int(run.id or 0))}
        run_id = st.selectbox("Hidden run", list(labels), format_func=labels.get, key="run_hidden_selected")
        run = next(r for r in hidden if r.id == run_id)
        if (st.button("Show it again", key="run_unhide")
                and guarded_write(lambda: run_services.hide_run(engine(), principal, run_id, False, run.hidden_at))):
            confirm(f"Run {run_id} is shown again.")
            st.rerun()
        plan = run_archive.deletion_plan(engine(), run_id)
        if plan.annotations:
            st.info(f"Run {run_id} holds {plan.annotations} human label(s), which are never deleted: it stays hidden.")
            return
        sure = st.checkbox(f"Delete {plan.summary()}. This cannot be undone.", key=f"run_delete_confirm_{run_id}")
        if st.button("Delete permanently", key="run_delete", type="primary", disabled=not sure):
            deleted = guarded_write(lambda: run_services.delete_run(engine(), principal, run_id, plan))
            if deleted:
                confirm(f"Deleted {deleted.summary()}.")
                st.rerun()
