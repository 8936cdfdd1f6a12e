"""Plotly figure builders for the results dashboards, and the helper that shows a chart with its CSV download."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
from _plotly_utils.basevalidators import is_homogeneous_array
from _plotly_utils.utils import is_skipped_key, to_typed_array_spec
from plotly.subplots import make_subplots

from core.analysis.readmodel import CATEGORY_LABELS, DOMAIN_METRICS, METRICS

PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}
RADAR_LABELS = {"faithfulness": "Faithfulness", "coverage": "Coverage", "strict_ias": "Strict IAS", "loose_ias": "Loose IAS"}
# qualitative: the first ten are far apart (CIELAB distance >= 27) and none is grey (greys are for baselines); the
# next ten are darker or lighter kin, used only past ten models
MODEL_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
                 "#000000", "#393b79", "#ad494a", "#637939", "#8c6d31", "#7b4173", "#3182bd", "#e6550d", "#31a354",
                 "#756bb1", "#843c39"]
BASELINE_COLORS = ["#7f7f7f", "#b0b0b0", "#525252", "#cccccc"]
SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "star", "cross", "triangle-down", "pentagon", "hexagon"]
DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
PERCENT_AXIS = {"range": [0, 109], "tickvals": [0, 20, 40, 60, 80, 100], "ticktext": ["0%", "20%", "40%", "60%", "80%", "100%"]}
SMALL_N = 30


@dataclass(frozen=True)
class ChartSpec:
    """A chart as its finished plotly spec: only valid properties, each dict's keys in the order plotly's validation
    puts them, the default template left to the figure (as plotly adds it). Shown without building plotly's object
    tree, which built and then deep-copied for Streamlit was about half a chart's CPU; `figure()` builds the tree."""

    data: list[dict]
    layout: dict

    def figure(self) -> go.Figure:
        """The plotly figure of this spec (not validated again: its properties are valid)."""
        return go.Figure(copy.deepcopy({"data": self.data, "layout": self.layout}), _validate=False)  # it edits its input


class _SpecFigure(go.Figure):
    """What Streamlit's plotly_chart is handed for a ChartSpec: it reads a figure only through to_dict, answered here
    from the spec plus the default template, as go.Figure(spec).to_dict() answers it (tests/ux/test_charts.py)."""

    def __init__(self, spec: ChartSpec) -> None:  # no object tree: go.Figure.__init__ is deliberately not called
        self._spec = spec

    def to_dict(self) -> dict:
        """The spec as plotly's to_dict gives it: the default template added, arrays as typed-array specs (new dicts;
        lists of plain values and the template are shared with the spec and a cache, which their readers never
        change)."""
        layout = _sendable(self._spec.layout)
        default = pio.templates.default
        if "template" not in layout and default is not None:
            layout["template"] = _template_json(default) if isinstance(default, str) else default.to_plotly_json()
        return {"data": _sendable(self._spec.data), "layout": layout}


@functools.lru_cache(maxsize=4)
def _template_json(name: str) -> dict:
    """A named template's JSON dict, as a figure's layout carries it (held once: ~150 nested values to copy)."""
    return pio.templates[name].to_plotly_json()


def _sendable(value: object) -> object:
    """`value` as plotly's to_dict sends it (a deep copy, then convert_to_base64): dicts new and their homogeneous
    arrays as typed-array specs, except under the keys plotly skips; lists and tuples new only where they hold a dict,
    list or tuple (plotly converts no array that sits directly in a list)."""
    if isinstance(value, dict):
        return {key: item if is_skipped_key(key) else to_typed_array_spec(item) if is_homogeneous_array(item)
                else _sendable(item) for key, item in value.items()}
    if isinstance(value, list | tuple) and any(isinstance(item, dict | list | tuple) for item in value):
        return type(value)(_sendable(item) for item in value)
    return value


def show_chart(fig: go.Figure | ChartSpec, data: pd.DataFrame, key: str, *, selectable: bool = False):
    """Render `fig` (toolbar with PNG export kept) and a CSV download of `data`; returns the selection event."""
    config = {**PLOTLY_CONFIG, "toImageButtonOptions": {**PLOTLY_CONFIG["toImageButtonOptions"], "filename": key}}
    if isinstance(fig, ChartSpec):
        fig = _SpecFigure(fig)
    event = st.plotly_chart(fig, key=key, config=config, on_select="rerun" if selectable else "ignore",
                            selection_mode=("points",) if selectable else ("points", "box", "lasso"))
    st.download_button("Download chart data (CSV)", lambda: data.to_csv(index=False).encode("utf-8"),  # on click only
                       file_name=f"{key}.csv", mime="text/csv", key=f"{key}_csv", icon=":material/download:")
    return event


def _pct(values: pd.Series) -> pd.Series:
    return values * 100.0


def no_data_text(values: pd.Series) -> np.ndarray:
    """'no data' where a value is missing, so an absent bar never reads as 0."""
    return np.where(values.isna(), "no data", "")


def small_n_text(values: pd.Series, n: pd.Series | None) -> np.ndarray:
    """'no data' where a value is missing, '†' (n < 30: a small sample) where it rests on few items, else ''."""
    if n is None:
        return no_data_text(values)
    small = pd.to_numeric(n, errors="coerce").to_numpy() < SMALL_N
    return np.where(values.isna(), "no data", np.where(small, "†", ""))


def leaderboard_bars(long: pd.DataFrame, metrics: list[str]) -> go.Figure:
    """Grouped bars per model for the chosen metrics (percent, 0-100 axis), 95% CI error bars, n in the hover,
    † on bars resting on fewer than 30 items, baselines hatched. Cost and latency have their own chart (cost_latency).
    The figure is built from one spec (one validation pass, a third of adding trace by trace)."""
    if set(metrics) <= set(COST_LATENCY):
        return cost_latency(long)
    bars = []
    for key in metrics:
        d = long[long["metric"] == key]
        scale = 100.0
        n_text = d["n"].astype(int).astype(str) + np.where(d.get("small_n", False), " (small n)", "")
        bars.append({
            "type": "bar", "name": METRICS[key].label if key in METRICS else key, "x": d["model"],
            "y": d["value"].fillna(0.0) * scale, "text": small_n_text(d["value"], d["n"]), "textposition": "outside",
            "error_y": {"type": "data", "symmetric": False, "array": (d["ci_high"] - d["value"]) * scale,
                        "arrayminus": (d["value"] - d["ci_low"]) * scale},
            "marker": {"pattern": {"shape": np.where(d["is_baseline"], "/", "")}},
            "customdata": np.column_stack([d["group"], d["mark"], n_text]),
            "hovertemplate": "%{x}<br>%{y:.1f} (n=%{customdata[2]})<br>%{customdata[0]} %{customdata[1]}"
                             "<extra>%{fullData.name}</extra>",
        })
    return go.Figure({"data": bars, "layout": {"barmode": "group", "yaxis": {"title": {"text": "score (%)"}, **PERCENT_AXIS},
                                                "legend": {"title": {"text": "metric"}}, "margin": {"t": 30}}})


def orchestration_gap(long: pd.DataFrame) -> go.Figure:
    """Dumbbell per model: Loose IAS and Strict IAS with the gap between them (built from one spec)."""
    loose = long[long["metric"] == "loose_ias"].set_index("model")["value"] * 100
    strict = long[long["metric"] == "strict_ias"].set_index("model")["value"] * 100
    models = list(loose.index)
    traces: list[dict] = [{"type": "scatter", "x": [strict.get(m), loose.get(m)], "y": [m, m], "mode": "lines",
                           "line": {"color": "#bbb"}, "showlegend": False, "hoverinfo": "skip"} for m in models]
    traces += [{"type": "scatter", "x": values.reindex(models), "y": models, "mode": "markers", "name": name,
                "marker": {"size": 11}} for name, values in (("Strict IAS", strict), ("Loose IAS", loose))]
    pair = long[long["metric"].isin(["loose_ias", "strict_ias"])]
    small = pair.groupby("model")["small_n"].any() if "small_n" in pair else pd.Series(dtype=bool)
    labels = [f"{m} †" if small.get(m, False) else m for m in models]
    return go.Figure({"data": traces, "layout": {
        "xaxis": {"title": {"text": "IAS (%) — the distance is the orchestration gap"}, **PERCENT_AXIS},
        "yaxis": {"autorange": "reversed", "tickvals": models, "ticktext": labels}, "margin": {"t": 30}}})


def domain_radars(dm: pd.DataFrame, models: list[str], colors: dict[str, str] | None = None) -> go.Figure:
    """Figure 9: one radar per domain (Faithfulness, Coverage, Strict IAS, Loose IAS), chosen models overlaid.

    Axis labels sit on the diagonals and the radial ticks on the free horizontal, so labels, ticks and the domain
    titles never overprint; each model has its own colour (the same in every view), line dash and marker, so models
    with equal values stay visible; under each radar, the n per model and a † when a model has fewer than 30. Built
    from one spec of valid properties, not validated again (the grid's layout, plotly's template included, was
    validated once per set of domains): nested keys in the order validation puts them, so the figure's JSON is the
    validated figure's byte for byte (tests/ux/test_charts.py).
    """
    domains = sorted(dm["domain"].unique())
    rows = int(np.ceil(len(domains) / min(3, max(1, len(domains))))) or 1
    layout = dict(_radar_grid(tuple(domains)))  # only the annotations grow (a new list): no deep copy
    if "annotations" in layout:
        layout["annotations"] = list(layout["annotations"])
    traces: list[dict] = []
    theta = [RADAR_LABELS[k] for k in DOMAIN_METRICS] + [RADAR_LABELS[DOMAIN_METRICS[0]]]
    colors = colors or model_colors(models)
    values = _radar_values(dm)
    for i, domain in enumerate(domains):
        counts = []
        for j, model in enumerate(models):
            if (domain, model) not in values:
                continue
            r, n = values[domain, model]
            counts.append(n)
            same = [m for m in models[:j] if values.get((domain, m), ([], None))[0] == r]
            note = f" · same values as {', '.join(same)}" if same else ""
            traces.append({"type": "scatterpolar", "r": r + r[:1], "theta": theta, "name": model, "legendgroup": model,
                           "showlegend": i == 0,
                           "line": {"color": colors.get(model), "dash": DASHES[j % len(DASHES)], "width": 3 if same else 2},
                           "marker": {"size": 9 if same else 7, "symbol": SYMBOLS[j % len(SYMBOLS)]},
                           "connectgaps": False, "mode": "lines+markers",
                           "hovertemplate": "%{theta}: %{r:.1f}%" + f" (n={n}{' †' if n is not None and n < SMALL_N else ''})"
                                            + note + "<extra>" + model + "</extra>",
                           "subplot": f"polar{i + 1 if i else ''}"})
        _radar_n_note(layout, i, counts)
    height = 380 * rows + 40 + 22 * int(np.ceil(len(models) / 3))
    margin = {"b": 60 + 22 * int(np.ceil(len(models) / 3)), "l": 70, "r": 70, "t": 50}
    layout.update(height=height, margin=margin,
                  legend={"orientation": "h", "x": 0, "xanchor": "left",
                          "y": -44 / (height - margin["t"] - margin["b"]), "yanchor": "top"})
    return go.Figure({"data": traces, "layout": layout}, _validate=False)


@functools.lru_cache(maxsize=8)
def _radar_grid(domains: tuple[str, ...]) -> dict:
    """The layout of the radar grid (one polar per domain, three per row, titled), built once per set of domains:
    make_subplots and the polar axes cost more than every trace together. Validated once more as a layout, so its
    nested keys come in validation's order (domain_radars does not validate it again); callers must not change it."""
    cols = min(3, max(1, len(domains)))
    rows = int(np.ceil(len(domains) / cols)) or 1
    fig = make_subplots(rows=rows, cols=cols, specs=[[{"type": "polar"}] * cols for _ in range(rows)],
                        subplot_titles=list(domains), horizontal_spacing=0.14, vertical_spacing=0.22 / rows)
    fig.update_polars(radialaxis={"range": [0, 100], "angle": 0, "tickangle": 0, "tickvals": [0, 50, 100],
                                  "ticktext": ["0", "50%", "100%"], "tickfont": {"size": 9}},
                      angularaxis={"rotation": 45, "direction": "counterclockwise", "tickfont": {"size": 11}})
    return go.Layout(fig.layout.to_plotly_json()).to_plotly_json()


def _radar_values(dm: pd.DataFrame) -> dict[tuple[str, str], tuple[list[float | None], int | None]]:
    """Per (domain, model): the radar values in % (None where missing) and the responses behind them (first row wins)."""
    out: dict[tuple[str, str], tuple[list[float | None], int | None]] = {}
    for row in dm.to_dict("records"):
        if (row["domain"], row["model"]) not in out:
            r = [float(row[k]) * 100 if pd.notna(row[k]) else None for k in DOMAIN_METRICS]
            out[row["domain"], row["model"]] = r, int(row["responses"]) if "responses" in row else None
    return out


def _radar_n_note(layout: dict, index: int, counts: list[int | None]) -> None:
    """Under radar `index` of the grid `layout`: the responses per model (range) and † when any model has fewer
    than 30 (keys in validation's order)."""
    known = [c for c in counts if c is not None]
    if not known:
        return
    polar = layout[f"polar{index + 1 if index else ''}"]
    span = f"{min(known)}" if min(known) == max(known) else f"{min(known)}–{max(known)}"
    small = " †" if min(known) < SMALL_N else ""
    layout.setdefault("annotations", []).append({
        "font": {"color": "#666", "size": 10}, "showarrow": False, "text": f"n={span} per model{small}",
        "x": sum(polar["domain"]["x"]) / 2, "xanchor": "center", "xref": "paper", "y": polar["domain"]["y"][0],
        "yref": "paper", "yshift": -24})


def domain_heatmap(matrix: pd.DataFrame, counts: pd.DataFrame | None = None) -> go.Figure:
    """Domain x metric heatmap (percent); with `counts` (same shape: items behind each cell) cells on fewer than 30
    items carry a †."""
    z = matrix.to_numpy(dtype=float) * 100
    text = np.where(np.isnan(z), "no data", np.char.mod("%.1f%%", np.nan_to_num(z)))
    if counts is not None:
        n = counts.reindex(index=matrix.index, columns=matrix.columns).to_numpy(dtype=float)
        text = np.where(~np.isnan(z) & (n < SMALL_N), np.char.add(text, " †"), text)
    fig = go.Figure(go.Heatmap(z=z, x=[RADAR_LABELS.get(c, c) for c in matrix.columns], y=list(matrix.index), colorscale="Viridis",
                               zmin=0, zmax=100, text=text, texttemplate="%{text}", colorbar={"title": "%"}))
    fig.update_layout(margin={"t": 30})
    return fig


FAILURE_Y = {"rate": ("failure_rate", "failure rate (%)"), "stacked": ("failed", "failed constraints"),
             "normalised": ("share_of_failures", "share of the model's failures (%)")}


def failure_bars(rates: pd.DataFrame, level: str, view: str) -> ChartSpec:
    """Figure 4: failure rate per model by category or sub-dimension; view 'rate' (grouped), 'stacked' counts or
    'normalised' shares. One bar trace per category or sub-dimension (in sorted order), models in the rows' order; the
    figure is built from one spec (one validation pass instead of one per trace and one for the layout)."""
    color = "sub_dimension" if level == "sub_dimension" else "category"
    y, title = FAILURE_Y[view]
    scale = 100 if view != "stacked" else 1
    has_sub = "sub_dimension" in rates
    columns = {c: rates[c].to_numpy() for c in {color, "model", "category", y, "failed", "decided"}}
    if has_sub:
        columns["sub_dimension"] = rates["sub_dimension"].to_numpy()
    names = columns[color]
    bars = []
    for name in sorted(set(names.tolist())):
        rows = np.flatnonzero(names == name)
        label = CATEGORY_LABELS.get(name, name)
        values = pd.Series(columns[y][rows])
        sub = columns["sub_dimension"][rows] if has_sub else [""] * len(rows)
        # strings as lists (plotly's array validator takes them without converting; the JSON is the same), the
        # values as a float array (sent as a typed array, as before)
        bars.append({  # plotly's order: the properties sorted by name, then the type
            "customdata": np.column_stack([columns["category"][rows], sub, columns["failed"][rows],
                                           columns["decided"][rows]]).tolist(),
            "hovertemplate": "%{x}<br>" + label + ": %{y:.1f}<br>%{customdata[2]} failed of %{customdata[3]}"
                             "<extra></extra>",
            "name": label, "text": small_n_text(values, pd.Series(columns["decided"][rows])).tolist(),
            "textposition": "outside" if view == "rate" else "inside", "x": columns["model"][rows].tolist(),
            "y": values.to_numpy() * scale, "type": "bar",
        })
    axis = PERCENT_AXIS if view != "stacked" else {"rangemode": "nonnegative"}
    layout = {"barmode": "group" if view == "rate" else "stack", "clickmode": "event+select", "margin": {"t": 30},
              "yaxis": dict(sorted({"title": {"text": title}, **axis}.items()))}
    # the spec holds only valid properties, its keys in the order validation puts them, so the chart's JSON is the
    # validated figure's byte for byte (tests/ux/test_charts.py); shown as its spec (no object tree)
    return ChartSpec(bars, layout)


def paired_bars(frame: pd.DataFrame, x: str, series: list[tuple[str, str, str, str]], y_title: str,
                n: dict[str, str] | None = None, colors: dict[str, str] | None = None) -> go.Figure:
    """Grouped bars with asymmetric CIs: series = (name, value col, low col, high col), values in [0, 1] shown as %
    on a 0-100 axis; `n` maps a series name to its n column (bars on fewer than 30 items get a †)."""
    fig = go.Figure()
    for name, col, lo, hi in series:
        counts = frame[n[name]] if n and name in n else None
        fig.add_bar(name=name, x=frame[x], y=frame[col].fillna(0.0) * 100, text=small_n_text(frame[col], counts), textposition="outside",
                    marker_color=(colors or {}).get(name),
                    error_y={"type": "data", "symmetric": False, "array": (frame[hi] - frame[col]) * 100, "arrayminus": (frame[col] - frame[lo]) * 100})
    fig.update_layout(barmode="group", yaxis={"title": y_title, **PERCENT_AXIS}, margin={"t": 30})
    return fig


def scatter_models(frame: pd.DataFrame, x: str, y: str, x_title: str, y_title: str,
                   colors: dict[str, str] | None = None) -> go.Figure:
    """One point per model in its own colour (the same in every view), the paradigm as the marker shape, labelled;
    values in [0, 1] shown as %. Models on the same spot are drawn as nested rings with their labels spread, and the
    hover names the models they coincide with."""
    colors = colors or model_colors(frame["model"])
    fig = go.Figure()
    spots = frame.assign(_x=(frame[x] * 100).round(6), _y=(frame[y] * 100).round(6))
    positions = _label_positions(spots)
    for paradigm, d in spots.groupby("paradigm", sort=True):
        for _, row in d.iterrows():
            shared = spots[(spots["_x"] == row["_x"]) & (spots["_y"] == row["_y"])]["model"].tolist()
            rank = shared.index(row["model"])
            others = [m for m in shared if m != row["model"]]
            fig.add_scatter(x=[row[x] * 100], y=[row[y] * 100], mode="markers+text", text=[row["model"]],
                            textposition=positions[row["model"]], name=f"{row['model']} ({paradigm})",
                            marker={"size": 11 + 8 * (len(shared) - 1 - rank), "color": colors.get(row["model"]),
                                    "symbol": "circle-open" if rank < len(shared) - 1 else PARADIGM_SYMBOLS.get(paradigm, "circle"),
                                    "line": {"width": 2}},
                            hovertemplate=f"{row['model']}<br>%{{x:.1f}}%, %{{y:.1f}}%" + _n_note(row)
                                          + (f"<br>same point as {', '.join(others)}" if others else "") + "<extra></extra>")
    fig.update_layout(xaxis={"title": x_title, **PERCENT_AXIS}, yaxis={"title": y_title, **PERCENT_AXIS}, margin={"t": 30})
    return fig


def _n_note(row: pd.Series) -> str:
    """' (n=12 †)' for a row with an n column (the † when n < 30), else ''."""
    if "n" not in row or pd.isna(row["n"]):
        return ""
    return f" (n={int(row['n'])}{' †' if row['n'] < SMALL_N else ''})"


def _label_box(x: float, y: float, text: str, position: str) -> tuple[float, float, float, float]:
    """The (left, right, bottom, top) pixels a point label takes at `position` on a typical 0-100 % chart."""
    px, py, width, height, gap = x * LABEL_PX[0], y * LABEL_PX[1], len(text) * LABEL_PX[2], LABEL_PX[3], 8.0
    vertical, horizontal = position.split()
    left = {"center": px - width / 2, "right": px, "left": px - width}[horizontal]
    bottom = py + gap if vertical == "top" else py - gap - height
    return left, left + width, bottom, bottom + height


def _label_positions(spots: pd.DataFrame) -> dict[str, str]:
    """A label position per model, left to right, so that its label's box meets no label placed before it (the
    least-overlapping position when every one is taken); points sharing a spot therefore get different positions."""
    out: dict[str, str] = {}
    placed: list[tuple[float, float, float, float]] = []

    def clash(box) -> float:
        return sum(max(0.0, min(box[1], b[1]) - max(box[0], b[0])) * max(0.0, min(box[3], b[3]) - max(box[2], b[2]))
                   for b in placed)

    for _, row in spots.sort_values(["_x", "_y"]).iterrows():
        boxes = {pos: _label_box(row["_x"], row["_y"], str(row["model"]), pos) for pos in LABEL_POSITIONS}
        best = min(LABEL_POSITIONS, key=lambda pos: (clash(boxes[pos]), LABEL_POSITIONS.index(pos)))
        placed.append(boxes[best])
        out[row["model"]] = best
    return out


def forest(frame: pd.DataFrame, label: str, x_title: str, margin: float | None = None, n: str | None = None) -> go.Figure:
    """Forest plot: point = diff, bar = [ci_low, ci_high] (fractions shown as percentage points, the axis at least
    ±10 points wide), zero line, optional ± margin; with `n` (a count column) labels of rows on fewer than 30 get †.
    The figure is built from one spec (one validation pass)."""
    labels = frame[label].astype(str)
    if n is not None:
        labels = labels + np.where(pd.to_numeric(frame[n], errors="coerce") < SMALL_N, " †", "")
    reach = np.nanmax(np.abs(np.r_[frame["ci_low"], frame["ci_high"], frame["diff"], margin or 0.0, 0.1])) * 100 * 1.1
    points = {"type": "scatter", "x": frame["diff"] * 100, "y": labels, "mode": "markers", "marker": {"size": 10},
              "name": "difference", "error_x": {"type": "data", "symmetric": False,
                                                "array": (frame["ci_high"] - frame["diff"]) * 100,
                                                "arrayminus": (frame["diff"] - frame["ci_low"]) * 100}}
    lines = [_vline(0, "dot", "#888")]
    if margin is not None:
        lines += [_vline(m * 100, "dash", "#d62728") for m in (-margin, margin)]
    return go.Figure({"data": [points], "layout": {
        "shapes": lines, "xaxis": {"title": {"text": x_title}, "range": [-reach, reach]},
        "yaxis": {"autorange": "reversed"}, "margin": {"t": 30}, "showlegend": False}})


def _vline(x: float, dash: str, color: str) -> dict:
    """A vertical line across the plot at `x` (what Figure.add_vline adds)."""
    return {"type": "line", "x0": x, "x1": x, "xref": "x", "y0": 0, "y1": 1, "yref": "y domain",
            "line": {"dash": dash, "color": color}}


def composition_bars(comp: pd.DataFrame) -> go.Figure:
    """Instances per domain stacked by mode and origin (one spec, one validation pass)."""
    bars = [{"type": "bar", "name": f"{mode} · {origin}", "x": d["domain"], "y": d["instances"]}
            for (mode, origin), d in comp.groupby(["mode", "origin"], sort=True)]
    return go.Figure({"data": bars, "layout": {"barmode": "stack", "yaxis": {"title": {"text": "instances"}},
                                               "margin": {"t": 30}}})


COST_LATENCY = {"cost_per_1k": ("Generation cost per 1k instances", "USD"), "latency_min_per_1k": ("Latency per 1k instances (sequential)", "minutes")}
LABEL_POSITIONS = ["top center", "bottom center", "top right", "bottom right", "top left", "bottom left"]
LABEL_PX = (6.0, 3.0, 6.5, 14.0)  # px per x %, px per y %, px per character, label height: a ~650 x 330 px plot area
PARADIGM_SYMBOLS = {"standard": "circle", "reasoning": "diamond"}


def model_colors(models) -> dict[str, str]:
    """A colour per model that does not depend on which models a view shows: pass every model of the catalogue.
    Models take the palette in sorted-name order (never a hash, which can give two models near-identical colours),
    so up to ten models get ten clearly different colours; calibration baselines get greys."""
    names = sorted(set(models))
    baselines = [m for m in names if m.startswith("baseline:")]
    models_only = [m for m in names if m not in baselines]
    return ({name: BASELINE_COLORS[i % len(BASELINE_COLORS)] for i, name in enumerate(baselines)}
            | {name: MODEL_PALETTE[i % len(MODEL_PALETTE)] for i, name in enumerate(models_only)})


def cost_latency(long: pd.DataFrame) -> go.Figure:
    """Cost and latency per 1k instances side by side, each on its own axis and unit (never one shared axis),
    starting at zero, 95% CIs, † where n < 30, baselines hatched (built from one spec on a cached grid)."""
    layout = copy.deepcopy(_cost_latency_grid())
    bars = []
    for col, (key, (title, unit)) in enumerate(COST_LATENCY.items(), start=1):
        d = long[long["metric"] == key]
        axis = "" if col == 1 else str(col)
        bars.append({
            "type": "bar", "name": title, "x": d["model"], "y": d["value"].fillna(0.0),
            "text": small_n_text(d["value"], d["n"]), "textposition": "outside", "showlegend": False,
            "marker": {"pattern": {"shape": np.where(d["is_baseline"], "/", "")}},
            "error_y": {"type": "data", "symmetric": False, "array": d["ci_high"] - d["value"],
                        "arrayminus": d["value"] - d["ci_low"]},
            "customdata": d["n"], "hovertemplate": "%{x}<br>%{y:.2f} " + unit + " (n=%{customdata})<extra></extra>",
            "xaxis": f"x{axis}", "yaxis": f"y{axis}"})
        top = float(np.nanmax(np.r_[d["ci_high"].to_numpy(dtype=float), d["value"].to_numpy(dtype=float), 0.0]))
        layout[f"yaxis{axis}"].update({"title": {"text": unit}, "rangemode": "nonnegative",
                                       "range": [0, top * 1.15 if top > 0 else 1]})
    layout["margin"] = {"t": 40}
    return go.Figure({"data": bars, "layout": layout})


@functools.lru_cache(maxsize=1)
def _cost_latency_grid() -> dict:
    """The layout of cost_latency's two side-by-side plots with their titles, built once (make_subplots costs more
    than both traces together); without the default template it carries, which every new figure applies anyway
    (validating a copy of it took 4.5 of the figure's 5.5 ms; the figure's dict is the same)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=[f"{t} ({u})" for t, u in COST_LATENCY.values()],
                        horizontal_spacing=0.1)
    return {k: v for k, v in fig.layout.to_plotly_json().items() if k != "template"}
