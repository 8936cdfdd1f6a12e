"""Plotly figure builders for the results dashboards, and the helper that shows a chart with its CSV download."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from core.analysis.readmodel import CATEGORY_LABELS, DOMAIN_METRICS, METRICS

PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}
RADAR_LABELS = {"faithfulness": "Faithfulness", "coverage": "Coverage", "strict_ias": "Strict IAS", "loose_ias": "Loose IAS"}


def show_chart(fig: go.Figure, data: pd.DataFrame, key: str, *, selectable: bool = False):
    """Render `fig` (toolbar with PNG export kept) and a CSV download of `data`; returns the selection event."""
    config = {**PLOTLY_CONFIG, "toImageButtonOptions": {**PLOTLY_CONFIG["toImageButtonOptions"], "filename": key}}
    event = st.plotly_chart(fig, key=key, config=config, on_select="rerun" if selectable else "ignore",
                            selection_mode=("points",) if selectable else ("points", "box", "lasso"))
    st.download_button("Download chart data (CSV)", data.to_csv(index=False).encode("utf-8"), file_name=f"{key}.csv",
                       mime="text/csv", key=f"{key}_csv", icon=":material/download:")
    return event


def _pct(values: pd.Series) -> pd.Series:
    return values * 100.0


def no_data_text(values: pd.Series) -> np.ndarray:
    """'no data' where a value is missing, so an absent bar never reads as 0."""
    return np.where(values.isna(), "no data", "")


def leaderboard_bars(long: pd.DataFrame, metrics: list[str]) -> go.Figure:
    """Grouped bars per model for the chosen metrics, 95% CI error bars, n in the hover, baselines hatched."""
    fig = go.Figure()
    for key in metrics:
        d = long[long["metric"] == key]
        scale = 1.0 if key in ("cost_per_1k", "latency_min_per_1k") else 100.0
        n_text = d["n"].astype(int).astype(str) + np.where(d.get("small_n", False), " (small n)", "")
        fig.add_bar(
            name=METRICS[key].label if key in METRICS else key, x=d["model"], y=d["value"].fillna(0.0) * scale,
            text=no_data_text(d["value"]), textposition="outside",
            error_y={"type": "data", "symmetric": False, "array": (d["ci_high"] - d["value"]) * scale, "arrayminus": (d["value"] - d["ci_low"]) * scale},
            marker_pattern_shape=np.where(d["is_baseline"], "/", ""), customdata=np.column_stack([d["group"], d["mark"], n_text]),
            hovertemplate="%{x}<br>%{y:.1f} (n=%{customdata[2]})<br>%{customdata[0]} %{customdata[1]}<extra>%{fullData.name}</extra>",
        )
    fig.update_layout(barmode="group", yaxis_title="score (%)", legend_title="metric", margin={"t": 30})
    return fig


def orchestration_gap(long: pd.DataFrame) -> go.Figure:
    """Dumbbell per model: Loose IAS and Strict IAS with the gap between them."""
    loose = long[long["metric"] == "loose_ias"].set_index("model")["value"] * 100
    strict = long[long["metric"] == "strict_ias"].set_index("model")["value"] * 100
    models = list(loose.index)
    fig = go.Figure()
    for m in models:
        fig.add_scatter(x=[strict.get(m), loose.get(m)], y=[m, m], mode="lines", line={"color": "#bbb"}, showlegend=False, hoverinfo="skip")
    fig.add_scatter(x=strict.reindex(models), y=models, mode="markers", name="Strict IAS", marker={"size": 11})
    fig.add_scatter(x=loose.reindex(models), y=models, mode="markers", name="Loose IAS", marker={"size": 11})
    fig.update_layout(xaxis_title="IAS (%) — the distance is the orchestration gap", yaxis={"autorange": "reversed"}, margin={"t": 30})
    return fig


def domain_radars(dm: pd.DataFrame, models: list[str]) -> go.Figure:
    """Figure 9: one radar per domain (Faithfulness, Coverage, Strict IAS, Loose IAS), chosen models overlaid."""
    domains = sorted(dm["domain"].unique())
    cols = min(3, max(1, len(domains)))
    rows = int(np.ceil(len(domains) / cols)) or 1
    fig = make_subplots(rows=rows, cols=cols, specs=[[{"type": "polar"}] * cols for _ in range(rows)], subplot_titles=domains)
    theta = [RADAR_LABELS[k] for k in DOMAIN_METRICS] + [RADAR_LABELS[DOMAIN_METRICS[0]]]
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
    for i, domain in enumerate(domains):
        for j, model in enumerate(models):
            row = dm[(dm["domain"] == domain) & (dm["model"] == model)]
            if row.empty:
                continue
            r = [float(row[k].iloc[0]) * 100 if pd.notna(row[k].iloc[0]) else None for k in DOMAIN_METRICS]
            fig.add_scatterpolar(r=r + r[:1], theta=theta, name=model, legendgroup=model, showlegend=i == 0, line={"color": palette[j % len(palette)]},
                                 connectgaps=False, hovertemplate="%{theta}: %{r:.1f}<extra>" + model + "</extra>",
                                 row=i // cols + 1, col=i % cols + 1)
    fig.update_polars(radialaxis={"range": [0, 100]})
    fig.update_layout(height=360 * rows, margin={"t": 40})
    return fig


def domain_heatmap(matrix: pd.DataFrame) -> go.Figure:
    """Domain x metric heatmap (percent)."""
    z = matrix.to_numpy(dtype=float) * 100
    text = np.where(np.isnan(z), "no data", np.char.mod("%.1f", np.nan_to_num(z)))
    fig = go.Figure(go.Heatmap(z=z, x=[RADAR_LABELS.get(c, c) for c in matrix.columns], y=list(matrix.index), colorscale="Viridis",
                               zmin=0, zmax=100, text=text, texttemplate="%{text}", colorbar={"title": "%"}))
    fig.update_layout(margin={"t": 30})
    return fig


def failure_bars(rates: pd.DataFrame, level: str, view: str) -> go.Figure:
    """Figure 4: failure rate per model by category or sub-dimension; view 'rate' (grouped), 'stacked' counts or 'normalised' shares."""
    color = "sub_dimension" if level == "sub_dimension" else "category"
    y = {"rate": "failure_rate", "stacked": "failed", "normalised": "share_of_failures"}[view]
    fig = go.Figure()
    for name, d in rates.groupby(color, sort=True):
        label = CATEGORY_LABELS.get(name, name)
        fig.add_bar(name=label, x=d["model"], y=d[y] * (100 if view != "stacked" else 1),
                    customdata=np.column_stack([d["category"], d["sub_dimension"] if "sub_dimension" in d else [""] * len(d), d["failed"], d["decided"]]),
                    hovertemplate="%{x}<br>" + label + ": %{y:.1f}<br>%{customdata[2]} failed of %{customdata[3]}<extra></extra>")
    fig.update_layout(barmode="group" if view == "rate" else "stack", margin={"t": 30}, clickmode="event+select",
                      yaxis_title={"rate": "failure rate (%)", "stacked": "failed constraints", "normalised": "share of the model's failures (%)"}[view])
    return fig


def paired_bars(frame: pd.DataFrame, x: str, series: list[tuple[str, str, str, str]], y_title: str) -> go.Figure:
    """Grouped bars with asymmetric CIs: series = (name, value col, low col, high col), values in [0, 1] shown as %."""
    fig = go.Figure()
    for name, col, lo, hi in series:
        fig.add_bar(name=name, x=frame[x], y=frame[col].fillna(0.0) * 100, text=no_data_text(frame[col]), textposition="outside",
                    error_y={"type": "data", "symmetric": False, "array": (frame[hi] - frame[col]) * 100, "arrayminus": (frame[col] - frame[lo]) * 100})
    fig.update_layout(barmode="group", yaxis_title=y_title, margin={"t": 30})
    return fig


def scatter_models(frame: pd.DataFrame, x: str, y: str, x_title: str, y_title: str) -> go.Figure:
    """One point per model, coloured by paradigm, labelled; values in [0, 1] shown as %."""
    fig = go.Figure()
    for paradigm, d in frame.groupby("paradigm", sort=True):
        fig.add_scatter(x=d[x] * 100, y=d[y] * 100, mode="markers+text", text=d["model"], textposition="top center", name=paradigm, marker={"size": 11})
    fig.update_layout(xaxis_title=x_title, yaxis_title=y_title, margin={"t": 30})
    return fig


def forest(frame: pd.DataFrame, label: str, x_title: str, margin: float | None = None) -> go.Figure:
    """Forest plot: point = diff, bar = [ci_low, ci_high] (fractions shown as percentage points), zero line, optional ± margin."""
    fig = go.Figure(go.Scatter(
        x=frame["diff"] * 100, y=frame[label], mode="markers",
        error_x={"type": "data", "symmetric": False, "array": (frame["ci_high"] - frame["diff"]) * 100, "arrayminus": (frame["diff"] - frame["ci_low"]) * 100},
        marker={"size": 10}, name="difference",
    ))
    fig.add_vline(x=0, line_dash="dot", line_color="#888")
    if margin is not None:
        for m in (-margin, margin):
            fig.add_vline(x=m * 100, line_dash="dash", line_color="#d62728")
    fig.update_layout(xaxis_title=x_title, yaxis={"autorange": "reversed"}, margin={"t": 30}, showlegend=False)
    return fig


def composition_bars(comp: pd.DataFrame) -> go.Figure:
    """Instances per domain stacked by mode and origin."""
    fig = go.Figure()
    for (mode, origin), d in comp.groupby(["mode", "origin"], sort=True):
        fig.add_bar(name=f"{mode} · {origin}", x=d["domain"], y=d["instances"])
    fig.update_layout(barmode="stack", yaxis_title="instances", margin={"t": 30})
    return fig
