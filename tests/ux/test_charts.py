"""Charts and tables read right: radar labels apart, coinciding models visible, one colour per model everywhere,
percent axes 0-100, cost and latency on their own axes, small samples flagged, raw column names hidden."""

from __future__ import annotations

import copy
import itertools
import json
import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from core.analysis.readmodel import CATEGORY_LABELS, DOMAIN_METRICS
from ui import charts
from ui.tables import COMPOSITION_COLUMNS, Col, table_config, with_small_n

MODELS = ["alpha", "beta", "gamma", "baseline:always-refuse"]


def radar_frame(same: bool = False, responses: int = 40) -> pd.DataFrame:
    rows = []
    for d, domain in enumerate(["Energy", "Legal", "Medical", "Finance"]):
        for m, model in enumerate(MODELS):
            values = {k: 0.5 if same and model in ("alpha", "beta") else 0.2 + 0.1 * m + 0.05 * d for k in DOMAIN_METRICS}
            rows.append({"model": model, "domain": domain, "responses": responses, **values})
    return pd.DataFrame(rows)


def polars(fig) -> list:
    """The radars' polar layouts in subplot order (polar, polar2, ...)."""
    names = sorted((k for k in fig.layout if k.startswith("polar")), key=lambda k: int(k[5:] or 1))
    return [fig.layout[k] for k in names]


def test_radar_labels_ticks_and_titles_do_not_share_a_place():
    fig = charts.domain_radars(radar_frame(), MODELS)
    for polar in polars(fig):
        assert polar.angularaxis.rotation == 45  # axis labels on the diagonals: never at the top (title) or sides
        assert polar.radialaxis.angle == 0 and list(polar.radialaxis.tickvals) == [0, 50, 100]  # ticks on the free horizontal
    titles = [a for a in fig.layout.annotations if a.text in ("Energy", "Legal", "Medical", "Finance")]
    for title, polar in zip(titles, polars(fig)[: len(titles)], strict=True):
        assert title.y >= polar.domain.y[1]  # above its radar
    row = sorted(polars(fig)[:3], key=lambda p: p.domain.x[0])
    gaps = [b.domain.x[0] - a.domain.x[1] for a, b in itertools.pairwise(row)]
    assert min(gaps) >= 0.13  # room for the diagonal labels between neighbours


def test_coinciding_models_stay_visible_and_say_so():
    fig = charts.domain_radars(radar_frame(same=True), MODELS)
    energy = [t for t in fig.data if t.subplot == "polar"]
    alpha, beta = (next(t for t in energy if t.name == n) for n in ("alpha", "beta"))
    assert list(alpha.r) == list(beta.r)
    assert (alpha.line.dash, alpha.marker.symbol) != (beta.line.dash, beta.marker.symbol)
    assert "same values as alpha" in beta.hovertemplate and beta.line.width > alpha.line.width


def test_scatter_keeps_coinciding_points_apart():
    frame = pd.DataFrame({"model": ["alpha", "beta", "gamma"], "paradigm": ["standard", "standard", "reasoning"],
                          "coverage": [0.5, 0.5, 0.7], "cr": [0.4, 0.4, 0.9]})
    fig = charts.scatter_models(frame, "coverage", "cr", "x", "y")
    by_model = {t.text[0]: t for t in fig.data}
    assert by_model["alpha"].marker.size != by_model["beta"].marker.size
    assert by_model["alpha"].textposition != by_model["beta"].textposition
    assert "same point as beta" in by_model["alpha"].hovertemplate


def test_a_model_keeps_its_colour_whatever_the_view_shows():
    catalogue = charts.model_colors(MODELS + ["delta", "epsilon"])
    radar = charts.domain_radars(radar_frame(), ["gamma", "alpha"], catalogue)
    scatter = charts.scatter_models(pd.DataFrame({"model": ["alpha", "gamma"], "paradigm": ["standard"] * 2,
                                                  "x": [0.1, 0.2], "y": [0.3, 0.4]}), "x", "y", "x", "y", catalogue)
    colours = {t.name: t.line.color for t in radar.data} | {t.text[0]: t.marker.color for t in scatter.data}
    assert colours == {"alpha": catalogue["alpha"], "gamma": catalogue["gamma"]}
    assert len(set(charts.model_colors(MODELS).values())) == len(MODELS)
    assert charts.model_colors(MODELS)["alpha"] == charts.model_colors([*MODELS, "zeta"])["alpha"]  # one sorted after moves none
    assert catalogue["baseline:always-refuse"] in charts.BASELINE_COLORS


def _lab(hex_colour: str) -> tuple[float, float, float]:
    """CIELAB (D65) of an sRGB hex colour."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
              for c in (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))]
    xyz = [sum(w * c for w, c in zip(row, linear, strict=True)) / white for row, white in
           zip([(0.4124, 0.3576, 0.1805), (0.2126, 0.7152, 0.0722), (0.0193, 0.1192, 0.9505)], (0.95047, 1, 1.08883),
               strict=True)]
    fx, fy, fz = (t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116 for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


DISTINCT = 25.0  # CIELAB distance (ΔE76) two models' colours keep at least; 2.3 is "just noticeable"


@pytest.mark.parametrize("models", [
    pytest.param(["gpt-5-mini", "o4-mini"], id="two-models-once-both-blue"),
    *(pytest.param([f"model-{i}" for i in range(1, n + 1)], id=f"{n}-models") for n in range(2, 11)),
    pytest.param(["gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-5", "gpt-5-mini", "o3", "o4-mini", "claude-sonnet-4.5",
                  "claude-opus-4.1", "claude-haiku-4.5", "baseline:always-refuse"], id="ten-models-and-a-baseline"),
])
def test_up_to_ten_models_get_clearly_different_colours(models):
    colours = charts.model_colors(models)
    shown = [colours[m] for m in models if not m.startswith("baseline:")]
    assert len(set(shown)) == len(shown), colours
    closest = min(math.dist(_lab(a), _lab(b)) for a, b in itertools.combinations(shown, 2))
    assert closest >= DISTINCT, (round(closest, 1), colours)
    assert not set(shown) & set(charts.BASELINE_COLORS)


def board(values: list[float | None], metric: str = "loose_ias", n: int = 50) -> pd.DataFrame:
    return pd.DataFrame({"model": MODELS[: len(values)], "metric": metric, "value": values,
                         "ci_low": [v if v is None else max(v - 0.05, 0) for v in values],
                         "ci_high": [v if v is None else v + 0.05 for v in values], "n": n, "small_n": n < 30,
                         "is_baseline": False, "group": "g", "mark": ""})


@pytest.mark.parametrize(
    "values",
    [pytest.param([0.0, 0.0], id="all-zero"), pytest.param([None, None], id="no-data"), pytest.param([0.4, 0.9], id="normal")],
)
def test_percent_axes_stay_0_to_100(values):
    fig = charts.leaderboard_bars(board(values), ["loose_ias"])
    assert list(fig.layout.yaxis.range) == [0, 109] and fig.layout.yaxis.ticktext[-1] == "100%"
    gap = charts.orchestration_gap(pd.concat([board(values, "loose_ias"), board(values, "strict_ias")]))
    assert list(gap.layout.xaxis.range) == [0, 109]
    if values[0] is None:
        assert list(fig.data[0].text) == ["no data", "no data"]


def test_cost_and_latency_have_their_own_axes_and_units():
    long = pd.concat([board([0.0, 0.0], "cost_per_1k"), board([12.0, 30.0], "latency_min_per_1k")])
    long["is_baseline"] = [True, False, True, False]
    fig = charts.cost_latency(long)
    assert (fig.layout.yaxis.title.text, fig.layout.yaxis2.title.text) == ("USD", "minutes")
    assert fig.data[0].yaxis == "y" and fig.data[1].yaxis == "y2"
    assert fig.layout.yaxis.range[0] == 0 and fig.layout.yaxis.range[1] > 0  # all-zero cost: 0..1, never -1..1
    assert fig.layout.yaxis2.range[1] > 30.05  # above the highest CI
    # its cached grid leaves out make_subplots' template (validated on every figure): the figure gets the default one
    assert fig.to_dict()["layout"]["template"] == go.Figure().to_dict()["layout"]["template"]
    assert [a["text"] for a in fig.layout.annotations] == [f"{t} ({u})" for t, u in charts.COST_LATENCY.values()]


def test_forest_is_never_a_minus_one_to_one_axis():
    frame = pd.DataFrame({"label": ["a", "b"], "diff": [0.0, 0.0], "ci_low": [0.0, 0.0], "ci_high": [0.0, 0.0], "n": [12, 40]})
    fig = charts.forest(frame, "label", "pts", n="n")
    assert fig.layout.xaxis.range[1] >= 10 and "pts" in fig.layout.xaxis.title.text
    assert list(fig.data[0].y) == ["a †", "b"]


FOREST = pd.DataFrame({"label": ["a", "b", "c"], "diff": [0.1, np.nan, -0.05], "ci_low": [0.0, 0.1, -0.2],
                       "ci_high": [0.2, 0.3, 0.1], "n": [10, 40, 5]})


def _forest_trace_by_trace(frame: pd.DataFrame, margin: float | None) -> go.Figure:
    """The forest plot drawn as before its one-spec build: a scatter, then add_vline per line, then the layout."""
    labels = frame["label"].astype(str) + np.where(frame["n"] < charts.SMALL_N, " †", "")
    reach = np.nanmax(np.abs(np.r_[frame["ci_low"], frame["ci_high"], frame["diff"], margin or 0.0, 0.1])) * 110
    fig = go.Figure(go.Scatter(x=frame["diff"] * 100, y=labels, mode="markers", marker={"size": 10}, name="difference",
                               error_x={"type": "data", "symmetric": False,
                                        "array": (frame["ci_high"] - frame["diff"]) * 100,
                                        "arrayminus": (frame["diff"] - frame["ci_low"]) * 100}))
    fig.add_vline(x=0, line_dash="dot", line_color="#888")
    for m in () if margin is None else (-margin, margin):
        fig.add_vline(x=m * 100, line_dash="dash", line_color="#d62728")
    fig.update_layout(xaxis={"title": "pts", "range": [-reach, reach]}, yaxis={"autorange": "reversed"},
                      margin={"t": 30}, showlegend=False)
    return fig


@pytest.mark.parametrize("margin", [pytest.param(0.2, id="margin"), pytest.param(None, id="no-margin"),
                                    pytest.param(0.05, id="narrow-margin")])
def test_the_one_spec_forest_is_the_trace_by_trace_figure(margin):
    got = charts.forest(FOREST, "label", "pts", margin=margin, n="n")
    assert json.loads(got.to_json()) == json.loads(_forest_trace_by_trace(FOREST, margin).to_json())


@pytest.mark.parametrize("rows", [pytest.param(3, id="three-bars"), pytest.param(0, id="empty")])
def test_the_one_spec_composition_is_the_trace_by_trace_figure(rows):
    comp = pd.DataFrame({"domain": ["E", "L", "E"], "mode": ["gap", "gap", "noisy"],
                         "origin": ["natural", "natural", "augmented"], "instances": [3, 4, 5]}).iloc[:rows]
    want = go.Figure()
    for (mode, origin), d in comp.groupby(["mode", "origin"], sort=True):
        want.add_bar(name=f"{mode} · {origin}", x=d["domain"], y=d["instances"])
    want.update_layout(barmode="stack", yaxis_title="instances", margin={"t": 30})
    assert json.loads(charts.composition_bars(comp).to_json()) == json.loads(want.to_json())


@pytest.mark.parametrize(
    ("n", "value", "mark"),
    [pytest.param(29, 0.5, "†", id="small"), pytest.param(30, 0.5, "", id="enough"), pytest.param(5, None, "no data", id="missing")],
)
def test_small_samples_are_flagged_on_bars(n, value, mark):
    assert charts.small_n_text(pd.Series([value], dtype=float), pd.Series([n])).tolist() == [mark]
    assert with_small_n(pd.DataFrame({"n": [n]}), "n")["small n"].tolist() == ["†" if n < 30 else ""]


def test_heatmap_cells_on_few_items_carry_a_caveat():
    matrix = pd.DataFrame({"faithfulness": [0.5, np.nan]}, index=["Energy", "Legal"])
    counts = pd.DataFrame({"faithfulness": [12, 0]}, index=["Energy", "Legal"])
    text = charts.domain_heatmap(matrix, counts).data[0].text
    assert text[0][0] == "50.0% †" and text[1][0] == "no data"


def test_tables_show_labels_not_raw_names_and_pin_the_key_column():
    config = table_config(COMPOSITION_COLUMNS, pin="domain")
    assert config["avg_persona"]["label"] == "Persona constraints per instance"
    assert config["domain"]["pinned"] is True and config["ratio"]["type_config"]["format"] == "percent"
    rates = table_config({"model": Col("Model"), "ci_low": Col("95% CI low", "pp"), "k_with": None})
    assert rates["ci_low"]["label"] == "95% CI low (pts)" and rates["k_with"] is None and rates["model"]["pinned"]


def test_drill_down_tables_read_as_labels_with_the_model_pinned():
    from ui.tables import response_config

    config = response_config(pd.DataFrame(columns=["response_id", "model", "instance_uid", "sub_dimension", "loose_ias"]))
    assert [config[c]["label"] for c in config] == ["Response", "Model", "Instance", "Sub-dimension", "Loose IAS (%)"]
    assert config["model"]["pinned"] is True and config["loose_ias"]["type_config"]["format"] == "percent"


def test_orchestration_gap_and_scatter_flag_small_samples():
    long = pd.concat([board([0.4, 0.9], "loose_ias", n=12), board([0.2, 0.5], "strict_ias", n=40)])
    gap = charts.orchestration_gap(long)
    assert list(gap.layout.yaxis.ticktext) == ["alpha †", "beta †"] and list(gap.layout.yaxis.tickvals) == ["alpha", "beta"]
    frame = pd.DataFrame({"model": ["alpha", "beta"], "paradigm": ["standard"] * 2, "x": [0.1, 0.5], "y": [0.3, 0.7],
                          "n": [12, 40]})
    hover = {t.text[0]: t.hovertemplate for t in charts.scatter_models(frame, "x", "y", "x", "y").data}
    assert "(n=12 †)" in hover["alpha"] and "(n=40)" in hover["beta"]


SPEC_CASES = [
    pytest.param(lambda long: charts.leaderboard_bars(long, ["loose_ias"]), 100.0, id="metric-bars"),
    pytest.param(lambda long: charts.cost_latency(long.assign(metric="cost_per_1k")), 1.0, id="cost-bars"),
]


@pytest.mark.parametrize(("build", "scale"), SPEC_CASES)
def test_bars_built_from_one_spec_keep_hatching_intervals_and_n(build, scale):
    long = board([0.4, 0.9], "loose_ias", n=12).assign(is_baseline=[True, False])
    bar = build(long).data[0]
    assert list(bar.marker.pattern.shape) == ["/", ""]
    assert list(bar.error_y.array) == pytest.approx([0.05 * scale] * 2)
    assert list(bar.error_y.arrayminus) == pytest.approx([0.05 * scale] * 2)
    assert list(bar.text) == ["†", "†"] and "n=" in bar.hovertemplate


def test_the_gap_dumbbell_joins_each_models_two_points():
    long = pd.concat([board([0.4, 0.9], "loose_ias"), board([0.2, 0.5], "strict_ias")])
    fig = charts.orchestration_gap(long)
    assert [list(t.x) for t in fig.data[:2]] == [[20.0, 40.0], [50.0, 90.0]]
    assert [t.name for t in fig.data[2:]] == ["Strict IAS", "Loose IAS"]
    assert fig.layout.legend.title.text is None and fig.layout.yaxis.autorange == "reversed"


@pytest.mark.parametrize(("responses", "note"), [pytest.param(40, "n=40 per model", id="enough"),
                                                  pytest.param(12, "n=12 per model †", id="small")])
def test_each_radar_carries_its_n_note_under_it(responses, note):
    fig = charts.domain_radars(radar_frame(responses=responses), MODELS)
    notes = [a for a in fig.layout.annotations if a.text.startswith("n=")]
    assert [a.text for a in notes] == [note] * 4
    assert [a.y for a in notes] == [p.domain.y[0] for p in polars(fig)[:4]]  # the grid has room for six
    assert len(fig.data) == 4 * len(MODELS) and {t.subplot for t in fig.data} == {"polar", "polar2", "polar3", "polar4"}


def _radar_cases() -> dict[str, tuple[pd.DataFrame, list[str], dict[str, str] | None]]:
    gaps = radar_frame()
    gaps.loc[3, "coverage"] = np.nan  # a missing value, and a model without a row in one domain
    mixed = radar_frame()
    mixed.loc[mixed["domain"] == "Legal", "responses"] = [10, 50, 20, 40]
    return {"plain": (radar_frame(), MODELS, None), "coinciding": (radar_frame(same=True), MODELS, None),
            "small n": (radar_frame(responses=12), MODELS, None), "gaps": (gaps.drop(index=[5, 6]), MODELS, None),
            "no n": (radar_frame().drop(columns="responses"), MODELS, None),
            "one domain": (radar_frame()[lambda d: d["domain"] == "Energy"], MODELS, None),
            "mixed n, two models": (mixed, ["gamma", "alpha"], charts.model_colors([*MODELS, "delta"]))}


@pytest.mark.parametrize("case", list(_radar_cases()))
def test_domain_radars_json_is_the_validated_figures_byte_for_byte(case):
    dm, models, colors = _radar_cases()[case]
    fig = charts.domain_radars(dm, models, colors)  # built without validating its spec again
    assert fig.to_json() == go.Figure(fig.to_dict()).to_json()


def test_a_radar_figure_changed_afterwards_leaves_the_cached_grid_as_it_was():
    domains = ("Energy", "Finance", "Legal", "Medical")
    grid = json.dumps(charts._radar_grid(domains))
    fig = charts.domain_radars(radar_frame(), MODELS)
    fig.layout.polar.radialaxis.range = [0, 50]
    fig.layout.polar2.domain.x = [0, 0.1]
    fig.layout.annotations[0].text = "changed"
    fig.update_layout(height=10, margin={"t": 0})
    assert json.dumps(charts._radar_grid(domains)) == grid
    assert charts.domain_radars(radar_frame(), MODELS).to_json() != fig.to_json()
    assert [a.text for a in charts.domain_radars(radar_frame(), MODELS).layout.annotations][:4] == list(domains)


FAILURE_RATES = pd.DataFrame({
    "model": ["beta", "alpha", "beta", "alpha"], "category": ["persona", "persona", "output", "output"],
    "sub_dimension": ["tone", "tone", "length", "length"], "failed": [3, 0, 10, 5], "decided": [12, 40, 40, 0],
    "failure_rate": [0.25, 0.0, 0.25, np.nan], "share_of_failures": [3 / 13, np.nan, 10 / 13, 1.0]})


@pytest.mark.parametrize(
    ("level", "view", "column", "scale", "barmode", "title"),
    [pytest.param("category", "rate", "failure_rate", 100, "group", "failure rate (%)", id="category-rate"),
     pytest.param("category", "stacked", "failed", 1, "stack", "failed constraints", id="category-stacked"),
     pytest.param("sub_dimension", "normalised", "share_of_failures", 100, "stack",
                  "share of the model's failures (%)", id="subdimension-normalised")],
)
def test_failure_bars_one_trace_per_group_in_the_rows_order(level, view, column, scale, barmode, title):
    fig = charts.failure_bars(FAILURE_RATES, level, view).figure()
    group = "sub_dimension" if level == "sub_dimension" else "category"
    assert [t.name for t in fig.data] == [CATEGORY_LABELS.get(g, g) for g in sorted(FAILURE_RATES[group].unique())]
    for trace in fig.data:
        rows = FAILURE_RATES[FAILURE_RATES[group].map(lambda g: CATEGORY_LABELS.get(g, g)) == trace.name]
        assert list(trace.x) == rows["model"].tolist()
        np.testing.assert_array_equal(np.asarray(trace.y, dtype=float), rows[column].to_numpy(dtype=float) * scale)
        assert list(trace.text) == charts.small_n_text(rows[column], rows["decided"]).tolist()
        assert [list(c) for c in trace.customdata] == [
            [r.category, r.sub_dimension, r.failed, r.decided] for r in rows.itertuples()]
        assert trace.textposition == ("outside" if view == "rate" else "inside")
        assert f"{trace.name}: %{{y:.1f}}" in trace.hovertemplate
    assert fig.layout.barmode == barmode and fig.layout.yaxis.title.text == title
    assert fig.layout.clickmode == "event+select"
    assert fig.layout.yaxis.range == ((0, 109) if view != "stacked" else None)


@pytest.mark.parametrize(("level", "view"), [pytest.param(level, view, id=f"{level}-{view}")
                                             for level in ("category", "sub_dimension")
                                             for view in charts.FAILURE_Y])
def test_failure_bars_json_is_the_validated_figures_byte_for_byte(level, view):
    chart = charts.failure_bars(FAILURE_RATES, level, view)  # a spec: never validated again
    validated = go.Figure(copy.deepcopy({"data": chart.data, "layout": chart.layout})).to_json()  # template added
    # what Streamlit's plotly_chart sends: plotly.io.to_json of the figure's to_dict (typed arrays, template included)
    assert pio.to_json(charts._SpecFigure(chart).to_dict(), validate=False) == validated
    assert chart.figure().to_json() == validated


def test_a_shown_spec_is_copied_so_showing_it_twice_sends_the_same_json():
    chart = charts.failure_bars(FAILURE_RATES, "category", "rate")
    shown = charts._SpecFigure(chart)
    first = pio.to_json(shown.to_dict(), validate=False)
    assert pio.to_json(shown.to_dict(), validate=False) == first  # to_dict's typed arrays never replace the spec's
    assert isinstance(chart.data[0]["y"], np.ndarray)


@pytest.mark.parametrize("value", [
    pytest.param({"y": np.arange(3.0), "x": ["a", "b", "c"]}, id="array-in-a-dict"),
    pytest.param({"range": np.arange(2.0), "y": np.arange(2)}, id="skipped-key-keeps-its-array"),
    pytest.param([np.arange(2.0), {"y": np.arange(2.0)}], id="array-in-a-list-stays-dict-in-a-list-converts"),
    pytest.param({"customdata": [["a", 1], ["b", 2]], "marker": {"color": np.array([1, 2])}}, id="nested"),
    pytest.param(({"y": np.arange(2)}, 3), id="tuple-of-a-dict"),
    pytest.param({"y": pd.Series([1.5, 2.5]), "text": ("a", "b")}, id="series-and-a-tuple"),
])
def test_a_spec_is_sent_as_plotlys_deep_copy_and_base64_conversion_sends_it(value):
    from _plotly_utils.utils import convert_to_base64

    expected = copy.deepcopy({"v": value})
    convert_to_base64(expected)
    assert pio.to_json(charts._sendable({"v": value}), validate=False) == pio.to_json(expected, validate=False)
