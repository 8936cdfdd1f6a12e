"""Model pairs: two models on the same instances per subset, McNemar's test and a paired bootstrap CI (Figure 5)."""

import streamlit as st

from core.analysis import readmodel
from core.protocols import page_protocol
from ui import charts, results_view
from ui.auth import require_page
from ui.drilldown import drilldown
from ui.tables import Col, show_table, state_caption

PAIR_COLUMNS = {"mode": Col("Subset"), "metric": Col("Metric"), "n": Col("n (instances both answered)", "int"),
                "mean_a": Col("Model A", "pct"), "mean_b": Col("Model B", "pct"), "diff": Col("A − B", "pp"),
                "ci_low": Col("95% CI low", "pp"), "ci_high": Col("95% CI high", "pp"), "test": Col("Test"),
                "p_value": Col("p", "p"), "stars": Col("Significance"),
                "t": Col("paired t", "num"), "t_p": Col("p (paired t)", "p"),
                "cohen_d": Col("Cohen's d", "num", "mean(A − B) / SD(A − B) over the instances both answered"),
                "tost_p": Col("p (TOST, ±20 pts)", "p"), "tost_equivalent": Col("Equivalent (±20 pts)", "bool")}

require_page(__file__)
st.title("Model pairs")
st.caption("Paired comparison on the instances both models answered. Default accuracy per subset: noisy = Strict IAS, "
           "gap = rejection accuracy, conflict = conflict recognition.")

filters = results_view.sidebar_filters(subset=False, sets=True, protocol=page_protocol(__file__))
if filters:
    scores = results_view.filtered_scores(filters)
    order = readmodel.model_order(scores["model"].unique(), results_view.models(filters.version))
    c1, c2, c3, c4 = st.columns(4)
    results_view.url_seed("mp_a", "a", order)
    model_a = c1.selectbox("Model A", order, key="mp_a")
    results_view.url_keep("mp_a", "a")
    others = [m for m in order if m != model_a]
    results_view.url_seed("mp_b", "b", others)
    model_b = c2.selectbox("Model B", others, key="mp_b")
    results_view.url_keep("mp_b", "b")
    metric = c3.selectbox("Metric", ["subset accuracy", *[m.id for m in readmodel.QUALITY_METRICS if m.id != "over_abstention"]],
                          format_func=lambda k: readmodel.METRICS[k].label if k in readmodel.METRICS else k, key="mp_metric")
    statistics = c4.selectbox("Statistics", list(readmodel.PAIR_STATISTICS), key="mp_statistics",
                              help=" · ".join(f"{k}: {v.description}" for k, v in readmodel.PAIR_STATISTICS.items()))
    if model_b:
        pair = readmodel.paired_comparison(scores, model_a, model_b, None if metric == "subset accuracy" else metric,
                                           statistics=statistics)
        pair["lo_a"], pair["hi_a"] = pair["mean_a"], pair["mean_a"]
        shown = pair[pair["n"] > 0]
        states = readmodel.pair_states(scores, pair, [model_a, model_b])  # every row of the table, n = 0 included
        st.subheader(f"{model_a} vs {model_b}")
        charts.show_chart(charts.forest(shown.assign(label=shown["mode"] + " · " + shown["metric"] + " " + shown["stars"]), "label",
                                        f"A − B (percentage points), 95% paired bootstrap CI "
                                        f"({readmodel.PAIR_STATISTICS[statistics].description})", n="n"),
                          readmodel.states_beside(pair, states, ["mode", "metric"], {model_a: "a", model_b: "b"}),
                          "model_pair")
        show_table(pair, PAIR_COLUMNS, pin="mode", n_column="n", key="mp_table")
        for (mode, key, model), cell in states.groupby(["mode", "metric", "model"], sort=False):
            state_caption(cell, key, f"{mode} · {readmodel.METRICS[key].label}, {model}")
        with st.expander("Drill down: instances where the two disagree", icon=":material/search:"):
            mode = st.selectbox("Subset", list(shown["mode"]), key="mp_mode")
            if mode:
                key = pair.set_index("mode").loc[mode, "metric"]
                sub = scores[scores["mode"] == mode].pivot_table(index="instance_uid", columns="model", values=key)
                disagree = sub[(sub.get(model_a) != sub.get(model_b))].index if model_a in sub and model_b in sub else []
                rows = scores[scores["instance_uid"].isin(disagree) & scores["model"].isin([model_a, model_b])][["response_id", "model", "instance_uid", "domain", "mode", key]]
                drilldown(rows.sort_values(["instance_uid", "model"]), filters.judge, "mp_drill")
