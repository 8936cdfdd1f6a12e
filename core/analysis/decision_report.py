"""The decision report: one self-contained, print-ready HTML file rendered from a Decision (core.analysis.decision).

Inline CSS, charts as inline SVG, no script and no external reference, so it opens offline and fetches nothing.
Every number is printed from a field of the Decision, inside <span data-k="what" data-v="repr(value)">, so a test
(tests/analysis/test_decision_report.py) checks each against the read model to 1e-12. The file depends only on its
inputs: the time shown is the Decision's generated_at (the data's newest time unless one is passed).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from core.analysis import picker, readmodel
from core.analysis.decision import Decision
from core.construction.soundness import SMALL_N, SoundRate, small_n
from core.metrics import STATES
from core.scoring.judges.names import judge_label

_CSS = """
body{font-family:Georgia,'DejaVu Serif',serif;max-width:64em;margin:2em auto;color:#222;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;border-bottom:1px solid #999;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}td,th{border:1px solid #bbb;padding:3px 6px;text-align:left;
vertical-align:top}th{background:#eee}.red{color:#b00020;font-weight:bold}.flag{border:2px solid #b00020;padding:.4em .8em;
background:#fdecee}.muted{color:#666}.num{text-align:right;font-variant-numeric:tabular-nums}
@media print{body{margin:0;max-width:none;font-size:10pt}section.summary{break-after:page}h2{break-after:avoid}table,svg,.flag{break-inside:avoid}
table{width:100%;table-layout:fixed;font-size:7.5pt}td,th{overflow-wrap:anywhere;padding:2px 3px}
@page{size:A4;margin:15mm}}
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _is_missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


_FORMATS = {"pct": "{:.1%}", "int": "{:,.0f}", "usd": "${:,.4f}", "ms": "{:,.0f} ms", "p": "{:.3g}", "float": "{:.3f}", "g": "{:g}"}


def _display(value: float, kind: str) -> str:
    """A number as the report shows it: percent, signed points, count, dollars, milliseconds, p-value or plain."""
    return f"{value * 100:+.1f}" if kind == "pts" else _FORMATS[kind].format(value)


def num(key: str, value: object, kind: str = "pct") -> str:
    """A number as <span data-k data-v>shown</span>; '—' (data-v 'nan') when missing."""
    if _is_missing(value):
        return f"<span data-k='{_e(key)}' data-v='nan'>—</span>"
    v = float(value)  # type: ignore[arg-type]
    return f"<span data-k='{_e(key)}' data-v='{v!r}'>{_e(_display(v, kind))}</span>"


def _interval(key: str, low: object, high: object, kind: str = "pct") -> str:
    return f"[{num(key + '|ci_low', low, kind)}, {num(key + '|ci_high', high, kind)}]"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], caption: str = "") -> str:
    """An HTML table; header cells are escaped, row cells are HTML already."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    cap = f"<caption class='muted'>{_e(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _label(metric: str) -> str:
    """A metric's label with its protocol (a key of no registered protocol as written)."""
    try:
        return picker.label(metric)
    except KeyError:
        return readmodel.METRICS[metric].label if metric in readmodel.METRICS else metric


def _sign(metric: str) -> str:
    """'≤' for a ceiling (a metric where lower is better), else '≥'."""
    return "≤" if picker.lower_is_better(metric) else "≥"


def _test_line(key: str, t: picker.PairedTest) -> str:
    return (f"{_e(t.a)} − {_e(t.b)}: {num(key + '|diff', t.diff, 'pts')} points, 95% CI "
            f"{_interval(key, t.ci_low, t.ci_high, 'pts')} on {num(key + '|shared', t.shared, 'int')} shared instances")


def _fitness(d: Decision) -> str:
    """The fitness statement of the decision's judge, under a red warning unless the judge is fit to decide."""
    if d.fitness is None:
        return ""
    warning = "" if d.fitness.warning is None else f"<p class='flag red'>{_e(d.fitness.warning)}</p>"
    return f"{warning}<p class='fitness'>{_e(d.fitness.statement)} (docs/judges.md)</p>"


def _headline(d: Decision) -> str:
    r = d.result
    flags = "".join(f"<p class='flag red'>Safety: {_e(r.pick)} scores {num(f'safety|{f.metric}|value', f.value)} on "
                    f"{_e(_label(f.metric))} (n = {num(f'safety|{f.metric}|n', f.n, 'int')}), at or near 0 "
                    f"(≤ {picker.NEAR_ZERO:.0%}).</p>" for f in r.safety_flags)
    tests = []
    if r.floor:
        tests.append(f"Against the best baseline ({_e(picker.floor_verdict(r).split(' — ')[0])}): "
                     + _test_line("test|floor", r.floor))
    if r.top_two:
        tests.append(f"Top two ({_e(r.top_two.outcome.replace('_', ' '))}): " + _test_line("test|top_two", r.top_two))
    items = "".join(f"<li>{t}</li>" for t in tests)
    return f"<p><strong>{_e(picker.headline(r))}</strong></p>{flags}<ul>{items}</ul>"


def _summary(d: Decision) -> str:
    """The first page: recommendation, runner-up, margin and how sure, floors, weaknesses, judge fitness and cost
    (every number under the same key as in the detail below, so it is the same number)."""
    r = d.result
    items = [f"<li><strong>{_e(picker.headline(r))}</strong></li>"]
    if r.top_two:
        t = r.top_two
        items.append(f"<li>Runner-up and margin: {_test_line('test|top_two', t)} "
                     f"({_e(t.outcome.replace('_', ' '))})</li>")
    floors = ", ".join(f"{_e(_label(m))} {_sign(m)} {num(f'floor|{m}', v)}"
                       for m, v in d.spec.floors.items())
    items.append(f"<li>Floors: {floors or 'none'}</li>")
    weak = "; ".join(f"{_e(_label(w.metric))} (worse than {_e(w.test.b)})" for w in r.weaknesses)
    items.append(f"<li>Weaknesses: {weak or 'none significant'}</li>")
    fit = "; ".join(f"{_e(judge_label(j))}: {_e(g.label)} against gold, {_e(c.label)} on its stored check"
                    for j, (g, c) in d.judge_fitness.items())
    items.append(f"<li>Judge fitness: {fit or 'no judge'}</li>")
    if r.pick:
        items.append(f"<li>Cost of {_e(r.pick)} per 1k queries: "
                     f"{num(f'ranking|{r.pick}|total_cost_per_1k', r.ranking.set_index('model').loc[r.pick, 'total_cost_per_1k'], 'usd')}"
                     " (generation and judging)</li>")
    return f"<ul>{''.join(items)}</ul>"


def _recommendation(d: Decision) -> str:
    r = d.result
    if not r.pick:
        return "<p>No candidate meets every floor and the budget: nothing to weigh.</p>"
    row = r.ranking.set_index("model").loc[r.pick]
    contributions = sorted(((w * picker._utility(m, row[m]), m) for m, w in r.spec.weights.items()
                            if w > 0 and not _is_missing(row[m])), reverse=True)
    strengths = "".join(f"<li>{_e(_label(m))} {num(f'ranking|{r.pick}|{m}', row[m])}</li>" for _, m in contributions[:2])
    weak = "".join(f"<li class='red'>{_e(_label(w.metric))}: significantly worse than {_e(w.test.b)} — "
                   f"{_test_line(f'weakness|{w.metric}|{w.test.b}', w.test)}</li>" for w in r.weaknesses)
    barely = "".join(f"<li>{_e(_label(f.metric))} {num(f'near_floor|{f.metric}|value', f.value)} against the "
                     f"{'ceiling' if picker.lower_is_better(f.metric) else 'floor'} {num(f'near_floor|{f.metric}|floor', f.floor)}"
                     f" (margin {num(f'near_floor|{f.metric}|margin', f.margin, 'pts')} points)</li>"
                     for f in r.near_floors)
    change = "".join(f"<li>{_e(x)}</li>" for x in d.what_would_change)
    return (f"<h3>Strengths of {_e(r.pick)}</h3><ul>{strengths or '<li>none weighted</li>'}</ul>"
            f"<h3>Weaknesses (paired bootstrap, α = {picker.ALPHA:g}, each metric alone)</h3>"
            f"<ul>{weak or '<li>No metric on which another candidate or baseline is significantly better.</li>'}</ul>"
            f"<h3>Floors barely cleared (by less than {picker.BARELY_MARGIN * 100:.0f} points)</h3>"
            f"<ul>{barely or '<li>none</li>'}</ul><h3>What would change it</h3><ul>{change or '<li>—</li>'}</ul>")


def _spec(d: Decision) -> str:
    s = d.spec
    weights = ", ".join(f"{_e(_label(m))} ×{num(f'weight|{m}', w, 'g')}" for m, w in s.weights.items() if w > 0)
    floors = ", ".join(f"{_e(_label(m))} {_sign(m)} {num(f'floor|{m}', v)}"
                       for m, v in s.floors.items())
    budget = "none" if s.budget_per_1k is None else num("budget", s.budget_per_1k, "usd")
    scope = f"domains: {_e(', '.join(s.domains) or 'all')}; subsets: {_e(', '.join(s.modes) or 'all')}"
    return (f"<ul><li>Weights: {weights or 'none'}</li><li>Hard floors: {floors or 'none'}</li>"
            f"<li>Budget per 1k queries (generation): {budget}</li><li>Scope: {scope}</li></ul>")


_RANK_COLUMNS = (("score", "pct"), ("cost_per_1k", "usd"), ("judge_cost_per_1k", "usd"), ("total_cost_per_1k", "usd"),
                 ("latency_ms_mean", "ms"), ("responses", "int"))


def _ranking(d: Decision) -> str:
    rows = []
    for r in d.result.ranking.to_dict("records"):
        m = r["model"]
        cells = [_e("baseline" if r["baseline"] else r["rank"]), _e(m), "yes" if r["eligible"] else "no"]
        cells += [num(f"ranking|{m}|{c}", r[c], k) for c, k in _RANK_COLUMNS]
        cells += [f"{num(f'ranking|{m}|{x}', r[x])} n={num(f'ranking|{m}|n_{x}', r[f'n_{x}'], 'int')}"
                  for x in d.result.metrics]
        rows.append(cells)
    header = ["#", "Model", "Eligible", "Weighted score", "Generation $/1k", "Judging $/1k", "Total $/1k",
              "Latency (mean)", "Responses", *(_label(x) for x in d.result.metrics)]
    return _table(header, rows, picker.metrics_note(d.judge))


_EVIDENCE_NUMBERS = (("value", "pct"), ("n", "int"), *((f"n_{s}", "int") for s in STATES))


def _evidence(d: Decision) -> str:
    """Every metric of the recommendation per protocol: value, interval, n, the count of every state, the judge."""
    frame = d.result.evidence
    if frame.empty:
        return "<p>No metric measured.</p>"
    parts = []
    for title, g in frame.groupby("protocol_title", sort=False):
        rows = []
        for r in g.to_dict("records"):
            key = f"evidence|{r['key']}|{r['model']}"
            states = " · ".join(f"{s.replace('_', ' ')} {num(f'{key}|n_{s}', r[f'n_{s}'], 'int')}" for s in STATES
                                if r[f"n_{s}"])
            rows.append([_e(r["label"].rsplit(" (", 1)[0]), _e(r["model"]), num(f"{key}|value", r["value"]),
                         _interval(key, r["ci_low"], r["ci_high"]), num(f"{key}|n", r["n"], "int"), states or "—",
                         _e(r["interval"]), _e(r["judge_label"])])
        parts.append(f"<h3>{_e(title)}</h3>" + _table(
            ["Metric", "Model", "Value", "95% interval", "n", "States", "Interval", "Judge"], rows))
    return "".join(parts)


def _family(d: Decision) -> str:
    """Per protocol: the rank-sets of every reported metric and the top two's segment cells, one Holm correction."""
    f = d.family
    if f.rank_sets.empty:
        return "<p>No rank-sets: they need at least two candidates.</p>"
    parts = [f"<p>Paired sign-flip randomisation tests on the items both candidates answered: every pair of candidates "
             f"per metric and every segment cell of the top two, {num('family|tests', f.tests, 'int')} tests under one "
             f"Holm correction (α = {f.alpha:g}). A candidate's ranks exclude only those it is significantly behind or "
             "ahead of.</p>"]
    for protocol, g in f.rank_sets.groupby("protocol", sort=False):
        rows = []
        for r in g.to_dict("records"):
            key = f"family|{r['key']}|{r['model']}"
            rows.append([_e(r["label"].rsplit(" (", 1)[0]), _e(r["model"]), num(f"{key}|estimate", r["estimate"]),
                         _interval(key, r["ci_low"], r["ci_high"]), num(f"{key}|n", r["n"], "int"),
                         f"{num(f'{key}|rank_low', r['rank_low'], 'int')}–{num(f'{key}|rank_high', r['rank_high'], 'int')}",
                         "<strong>yes</strong>" if r["could_be_first"] else "no"])
        title = picker.keys.decision_key(g["key"].iloc[0]).protocol_title
        parts.append(f"<h3>{_e(title)}</h3>" + _table(["Metric", "Candidate", "Value", "95% interval", "n", "Ranks",
                                                        "Could be first"], rows))
        cells = f.segments[f.segments["protocol"] == protocol]
        if not cells.empty:
            seg_rows = []
            for r in cells.to_dict("records"):
                key = f"family_segment|{protocol}|{r['domain']}|{r['condition']}|{r['language']}|{r['key']}"
                seg_rows.append([_e(r["domain"]), _e(r["condition"]), _e(r["language"]),
                                 _e(r["label"].rsplit(" (", 1)[0]), num(f"{key}|shared", r["shared"], "int"),
                                 num(f"{key}|diff", r["diff"], "pts"), num(f"{key}|p_value", r["p_value"], "p"),
                                 num(f"{key}|p_holm", r["p_holm"], "p"), _significance(r["significant"]),
                                 _e(r["note"] or "")])
            a, b = cells["model_a"].iloc[0], cells["model_b"].iloc[0]
            parts.append(f"<p>{_e(a)} − {_e(b)} per segment, in points on each metric's better direction:</p>"
                         + _table(["Domain", "Condition", "Language", "Metric", "Shared", "Δ", "p", "p (Holm)",
                                   "Significant", "Note"], seg_rows))
    return "".join(parts)


def _datasets(d: Decision) -> str:
    rows = [[_e(r["benchmark_set"]), num(f"dataset|{r['benchmark_set']}|instances", r["instances"], "int"),
             _e(r["versions"]), f"<code>{_e(r['content_hash'])}</code>", _e(r["languages"]), _e(r["protocols"]),
             _e(r["conditions"])] for r in d.datasets.to_dict("records")]
    return _table(["Benchmark set", "Instances", "Versions", "Content hash", "Languages", "Protocols", "Conditions"],
                  rows, "content hash: sha256 (12 hex) of each instance's uid, version, query, reference and attributes"
                  ) + _data_notes(d)


def _sound_rate_item(r: SoundRate) -> str:
    key = f"sound_rate|{r.set_name}"
    if not r.verified:
        return (f"<li>Built set {_e(r.set_name)}: {num(key + '|instances', r.instances, 'int')} instances, none "
                "verified by experts yet (sound rate unknown).</li>")
    small = f"; small n (&lt; {SMALL_N}): the interval is wide" if small_n(r) else ""
    return (f"<li>Built set {_e(r.set_name)}: expert sound rate {num(key + '|rate', r.rate)} "
            f"({num(key + '|sound', r.sound, 'int')} of {num(key + '|n', r.verified, 'int')} verified sound, of "
            f"{num(key + '|instances', r.instances, 'int')} instances), Wilson 95% CI "
            f"{_interval(key, r.low, r.high)}{small}.</li>")


def _data_notes(d: Decision) -> str:
    """The built sets' expert sound rates (the Build benchmark page's computation) and the LLM-generated instances."""
    notes = d.data_notes
    if notes is None or (not notes.sound_rates and not notes.generated):
        return ""
    items = [_sound_rate_item(r) for r in notes.sound_rates]
    if notes.generated:
        listed = "; ".join(f"{_e(c.protocol)}: {num(f'generated|{c.protocol}|{c.generated}', c.instances, 'int')} "
                           f"{_e(c.generated)}" for c in notes.generated)
        items.append(f"<li>{num('generated|total', sum(c.instances for c in notes.generated), 'int')} of "
                     f"{num('generated|instances', notes.instances, 'int')} instances answered are marked "
                     f"LLM-generated or LLM-edited ({listed}).</li>")
    return "<p>Notes on the data:</p><ul>" + "".join(items) + "</ul>"


_JUDGE_NUMBERS = (("n_compared", "int"), ("n_unjudged", "int"), ("n_error", "int"), ("kappa", "float"),
                  ("kappa_low", "float"), ("kappa_high", "float"), ("agreement", "pct"))


def _judges(d: Decision) -> str:
    rows = [[_e(judge_label(r["judge"])), _e(r["label"]),
             *(num(f"judge|{r['judge']}|{r['dimension']}|{c}", r[c], k) for c, k in _JUDGE_NUMBERS), _e(r["note"])]
            for r in d.judges.to_dict("records")]
    table = _table(["Judge", "Dimension", "Compared", "Unjudged", "Errors", "κ", "κ low", "κ high", "Agreement",
                    "Note"], rows, f"against the {d.gold_labels} responses with a gold label")
    fit = "".join(f"<li>{_e(judge_label(j))}: against gold <strong>{_e(g.label)}</strong> ({_e(g.reason)}); stored "
                  f"check <strong>{_e(c.label)}</strong> ({_e(c.reason)})</li>" for j, (g, c) in d.judge_fitness.items())
    return table + f"<ul>{fit}</ul>" + _certificates(d)


def _certificates(d: Decision) -> str:
    """Per judge, suite and aspect: the judge, annotator and baseline rows (κ, 95% CI, n) and the verdict by the
    rule relative to the suite's annotators (judge_check.certificate_rows; docs/judges.md)."""
    if not d.certificates:
        return "<p class='muted'>No judge of these runs has been checked on a labelled suite (gauntlet judge check).</p>"
    rows = []
    for r in d.certificates:
        key = f"certificate|{r['judge']}|{r['suite']}|{r['aspect']}|{r['rater']}"
        ci = (_e(r["note"]) if r["note"] else "—" if r["ci"] is None
              else _interval(key, r["ci"][0], r["ci"][1], "float"))
        rows.append([_e(judge_label(r["judge"])), _e(r["suite"]), _e(r["aspect"]), _e(r["rater"]),
                     num(key, r["kappa"], "float"), ci, num(key + "|n_items", r["n_items"], "int"),
                     num(key + "|n_labels", r["n_labels"], "int"),
                     "" if r["lower_bound"] is None else num(key + "|lower_bound", r["lower_bound"], "float"),
                     f"<strong>{_e(r['verdict'])}</strong>"])
    return _table(["Judge", "Suite", "Aspect", "Rater", "κ", "95% CI", "n items", "n labels",
                   "Lower bound (one-sided 95%)", "Verdict"], rows,
                  "Judges certified per aspect against each suite's annotators, with the baselines as rows "
                  "(gauntlet judge check; docs/judges.md)")


_CORRECTED_NUMBERS = (("judge_value", "pct"), ("judge_n", "int"), ("estimate", "pct"))


def _corrected(d: Decision) -> str:
    rows = []
    for r in d.corrected.to_dict("records"):
        key = f"corrected|{r['model']}|{r['metric']}"
        rows.append([_e(r["model"]), _e(r["label"]), *(num(f"{key}|{c}", r[c], k) for c, k in _CORRECTED_NUMBERS),
                     _interval(key, r["ci_low"], r["ci_high"]), num(f"{key}|N", r["N"], "int"),
                     num(f"{key}|n", r["n"], "int"), num(f"{key}|effective_n", r["effective_n"], "float"),
                     _e(r["method"] if isinstance(r["method"], str) else ""), _e(r["note"] or "")])
    return _table(["Model", "Metric", "Raw judge", "Judge n", "Corrected", "95% CI", "N", "Gold n", "Effective n",
                   "Method", "Note"], rows)


def _counts(d: Decision) -> str:
    columns = [c for c in d.counts.columns if c != "model"]
    rows = [[_e(r["model"]), *(num(f"counts|{r['model']}|{c}", r[c], "int") for c in columns)]
            for r in d.counts.to_dict("records")]
    return _table(["Model", *(c.removeprefix("n_").replace("_", " ") for c in columns)], rows,
                  "responses and the states of their scores: undetermined, judge errors, unjudged, not applicable")


def _svg_intervals(frame: pd.DataFrame) -> str:
    """Corrected intervals per model as an inline SVG: a dot at the estimate, a bar over the interval, 0–100%."""
    width, left, row = 520, 170, 18
    lines = []
    for i, r in enumerate(frame.to_dict("records")):
        y = 20 + i * row
        x0, x1 = left + r["ci_low"] * (width - left - 10), left + r["ci_high"] * (width - left - 10)
        colour = "#1a5fb4" if r["could_be_first"] else "#888"
        dot = ("" if _is_missing(r["estimate"]) else
               f"<circle cx='{left + r['estimate'] * (width - left - 10):.1f}' cy='{y}' r='3.5' fill='{colour}'/>")
        lines.append(f"<text x='4' y='{y + 4}' font-size='11'>{_e(r['model'])}</text>"
                     f"<line x1='{x0:.1f}' x2='{x1:.1f}' y1='{y}' y2='{y}' stroke='{colour}' stroke-width='3'/>{dot}")
    height = 30 + len(frame) * row
    axis = "".join(f"<text x='{left + t * (width - left - 10) - 8:.1f}' y='{height - 2}' font-size='10'>{t:.0%}</text>"
                   for t in (0, 0.5, 1))
    return (f"<svg width='{width}' height='{height}' role='img'>"
            + "".join(lines) + axis + "</svg>")


def _rank_sets(d: Decision) -> str:
    if d.rank_sets.empty:
        return "<p>No rank-sets: they need gold labels and at least two candidates.</p>"
    parts = []
    for metric, g in d.rank_sets.groupby("metric", sort=False):
        rows = []
        for r in g.to_dict("records"):
            key = f"rankset|{metric}|{r['model']}"
            rows.append([_e(r["model"]), num(f"{key}|estimate", r["estimate"]), _interval(key, r["ci_low"], r["ci_high"]),
                         num(f"{key}|n", r["n"], "int"),
                         f"{num(f'{key}|rank_low', r['rank_low'], 'int')}–{num(f'{key}|rank_high', r['rank_high'], 'int')}",
                         "<strong>yes</strong>" if r["could_be_first"] else "no", _e(r["note"])])
        confidence = num(f"rankset|{metric}|confidence", g["confidence"].iloc[0], "pct")
        parts.append(f"<h3>{_e(_label(str(metric)))}</h3><p>Simultaneous intervals at {confidence} each "
                     f"(Bonferroni over {len(g)} candidates: all hold together with probability ≥ "
                     f"{1 - picker.ALPHA:.0%}).</p>" + _table(["Candidate", "Corrected", "Interval", "Gold n", "Ranks",
                                                                "Could be first", "Note"], rows) + _svg_intervals(g))
    return "".join(parts)


def _significance(value: object) -> str:
    """'yes' / 'no' for a tested segment cell, 'not tested' for one without enough gold labels."""
    if value is None or _is_missing(value):
        return "<span class='muted'>not tested</span>"
    return "<strong>yes</strong>" if bool(value) else "no"


_SEGMENT_NUMBERS = (("shared", "int"), ("n", "int"), ("judge_diff", "pts"), ("estimate", "pts"))


def _segments(d: Decision) -> str:
    if d.segments.empty:
        return "<p>No segment differences: they need gold labels and two candidates.</p>"
    rows = []
    for r in d.segments.to_dict("records"):
        key = f"segment|{r['domain']}|{r['condition']}|{r['language']}|{r['metric']}"
        rows.append([_e(r["domain"]), _e(r["condition"]), _e(r["language"]), _e(_label(r["metric"])),
                     *(num(f"{key}|{c}", r[c], k) for c, k in _SEGMENT_NUMBERS),
                     _interval(key, r["ci_low"], r["ci_high"], "pts"), num(f"{key}|p_value", r["p_value"], "p"),
                     num(f"{key}|p_holm", r["p_holm"], "p"),
                     _significance(r["significant"]), _e(r["note"] or "")])
    a, b = d.segments["model_a"].iloc[0], d.segments["model_b"].iloc[0]
    return (f"<p>{_e(a)} − {_e(b)} on the instances both answered, in points: judge-corrected (PPI++) where the judge "
            "decided the metric for both, from the gold labels alone where it did not (the note says so); p-values by "
            f"inverting the interval, Holm-adjusted over the tested cells (α = {picker.ALPHA:g}); a cell without "
            "enough shared gold labels is not tested.</p>"
            + _table(["Domain", "Condition", "Language", "Metric", "Shared", "Gold n", "Raw judge Δ", "Corrected Δ",
                      "95% CI", "p", "p (Holm)", "Significant", "Note"], rows))


def _provenance(d: Decision) -> str:
    runs = [[num(f"run|{r['id']}|id", r["id"], "int"), _e(r["name"]), _e(r["status"]), _e(r["code_version"]),
             _e(r["created_at"]), _e(r["finished_at"])] for r in d.runs.to_dict("records")]
    hashes = "".join(f"<li>{_e(k)}: <code>{_e(v)}</code></li>" for k, v in d.prompt_hashes.items())
    return (_table(["Run", "Name", "Status", "Code version", "Created", "Finished"], runs)
            + f"<ul>{hashes}<li>Product version: RAG Gauntlet {_e(d.product_version)}</li>"
              f"<li>Judge: {_e(judge_label(d.judge))}</li></ul>")


def _running_header(d: Decision) -> str:
    """Every printed page's header: the report's title and its run ids (CSS-safe characters only)."""
    text = f"Decision report: {d.question[:80]} · runs {', '.join(f'#{r}' for r in d.run_ids)}"
    safe = "".join(c if c.isalnum() or c in " #,:·?-" else " " for c in text)
    return f'@page{{@top-center{{content:"{safe}";font-size:7pt;color:#666}}}}'


def render_html(d: Decision) -> str:
    """The decision report as one self-contained HTML document."""
    title = f"Decision: {d.question}"
    candidates = ", ".join(d.result.ranking.loc[~d.result.ranking["baseline"], "model"]) or "none"
    baselines = ", ".join(d.result.ranking.loc[d.result.ranking["baseline"], "model"]) or "none"
    sections = [
        ("Summary", _summary(d)),
        ("The question and the candidates", f"<p>{_e(d.question)}</p><p>Candidates: {_e(candidates)}. "
                                            f"Calibration baselines: {_e(baselines)}.</p>" + _spec(d)),
        ("Recommendation", _headline(d) + _recommendation(d)),
        ("Ranking, cost and latency", _ranking(d)),
        ("The metrics behind it, per protocol", _evidence(d)),
        ("Rank-sets and segment differences per protocol", _family(d)),
        ("The data", _datasets(d)),
        ("Judges and their agreement with gold", _judges(d)),
        ("Raw and judge-corrected estimates", _corrected(d) + _counts(d)),
        ("Rank-sets: which candidates could be first", _rank_sets(d)),
        ("Segment differences between the top two", _segments(d)),
        ("Runs, prompts and product version", _provenance(d)),
    ]
    body = "".join(f"<section{' class=summary' if h == 'Summary' else ''}><h2>{_e(h)}</h2>{c}</section>"
                   for h, c in sections)
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{_e(title)}</title><style>{_CSS}{_running_header(d)}</style></head><body>"
            f"<h1>{_e(title)}</h1><p class='muted'>Data as of {_e(d.generated_at)}; runs "
            f"{_e(', '.join(f'#{r}' for r in d.run_ids))}; judge {_e(judge_label(d.judge))}.</p>{_fitness(d)}{body}"
            "</body></html>\n")


def pdf_available() -> bool:
    """Whether WeasyPrint (the `pdf` extra) is installed, so render_pdf can run."""
    import importlib.util

    return importlib.util.find_spec("weasyprint") is not None


def render_pdf(document: str) -> bytes:
    """The report as PDF, rendered by WeasyPrint (a Python package on Pango: no browser) with every fetch refused;
    RuntimeError naming the `pdf` extra when WeasyPrint is not installed."""
    return bytes(layout_pdf(document).write_pdf())


def layout_pdf(document: str) -> Any:  # a weasyprint.Document (WeasyPrint: an optional extra, untyped)
    """The report laid out in PDF pages by WeasyPrint with every fetch refused (what render_pdf writes); RuntimeError
    naming the `pdf` extra when WeasyPrint is not installed."""
    try:
        import weasyprint  # type: ignore[import-untyped]
    except ImportError as error:  # pragma: no cover - the dev and pdf extras install it
        raise RuntimeError("PDF needs WeasyPrint: pip install 'rag-gauntlet[pdf]' (and the system's Pango)") from error
    from weasyprint.urls import FatalURLFetchingError, URLFetcher  # type: ignore[import-untyped]

    class Refuse(URLFetcher):
        def fetch(self, url: str, headers: object = None) -> None:
            raise FatalURLFetchingError(f"the decision report must fetch nothing, but asked for {url}")

    return weasyprint.HTML(string=document, url_fetcher=Refuse()).render()


def numbers(document: str) -> dict[str, float]:
    """Every number of a rendered report by key (data-k -> data-v): what the tests compare to the read model."""
    import re

    return {html.unescape(k): float(v) for k, v in re.findall(r"data-k='([^']*)' data-v='([^']*)'", document)}

