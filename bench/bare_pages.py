"""The reference for bench/bench_dashboards.py: per app page, a bare Streamlit page that runs the minimal SQL for the
same content (GROUP BY in the database, one table per figure of the page, no caching of data) on the same database.

Each script draws the widget the product page's timed filter change sets (same kind and key, bench_dashboards.CHANGES),
so one change applies to both. Aggregates are computed by the database (AVG, COUNT, SUM); intervals, rank marks and
charts are not drawn: that is the reference's advantage the product has to stay within 2x of.
"""

from __future__ import annotations

PREAMBLE = '''
import os

import pandas as pd
import sqlalchemy as sa
import streamlit as st


@st.cache_resource
def _engine():
    return sa.create_engine(os.environ["GAUNTLET_DATABASE_URL"])


def q(sql, **params):
    with _engine().connect() as conn:
        return pd.read_sql(sa.text(sql), conn, params=params)


JUDGE = q("SELECT judge FROM response_score GROUP BY judge ORDER BY COUNT(*) DESC LIMIT 1")["judge"].iloc[0]
# the five EnterpriseRAG response-level metrics, one column each, from the long response_metric table (migration 0021)
PIVOT = ", ".join(f"MAX(CASE WHEN metric = '{m}' THEN value END) AS {m}"
                  for m in ("faithfulness", "coverage", "rejection", "conflict_recognition", "refusal"))
SCORES = f"""response r JOIN model m ON m.id = r.model_id JOIN instance i ON i.id = r.instance_id
JOIN domain d ON d.id = i.domain_id LEFT JOIN response_score s ON s.response_id = r.id AND s.judge = :judge
LEFT JOIN (SELECT response_id, {PIVOT} FROM response_metric WHERE judge = :judge AND state = 'scored'
GROUP BY response_id) rm ON rm.response_id = r.id"""
STRICT = "CASE WHEN s.errors = 0 AND s.judged = s.n THEN (s.passed = s.n) * 1.0 END"
LOOSE = "s.passed * 1.0 / NULLIF(s.judged, 0)"


def subset():
    chosen = st.selectbox("Subset", ["all", "noisy", "gap", "conflict"], key="results_subset")
    return ("", {}) if chosen == "all" else (" AND i.mode = :mode", {"mode": chosen})
'''

_PROTOCOL_PAGE = '''
st.title("{title}")
st.dataframe(q("""SELECT m.name AS model, v.metric, AVG(v.value) AS value, COUNT(v.value) AS n FROM verdict v
JOIN response r ON r.id = v.response_id JOIN model m ON m.id = r.model_id JOIN instance i ON i.id = r.instance_id
WHERE i.protocol IN ({protocols}) AND v.constraint_id IS NULL GROUP BY m.name, v.metric"""))
'''

BODIES: dict[str, str] = {
    # the page's composition (EnterpriseRAG Tables 5 and 6) and its instance list with status and counts
    "browse_benchmark": '''
st.title("Browse benchmark")
st.dataframe(q("""SELECT d.name AS domain, COUNT(*) AS instances, ROUND(AVG(COALESCE(c.n, 0)), 2) AS avg_constraints,
ROUND(AVG(COALESCE(c.persona, 0)), 2) AS avg_persona, ROUND(AVG(COALESCE(c.output, 0)), 2) AS avg_output,
ROUND(AVG(COALESCE(c.kp, 0)), 2) AS avg_knowledge_protocol FROM instance i JOIN domain d ON d.id = i.domain_id
LEFT JOIN (SELECT instance_id, COUNT(*) AS n, SUM(category = 'persona') AS persona, SUM(category = 'output') AS output,
SUM(category = 'knowledge_protocol') AS kp FROM "constraint" GROUP BY instance_id) c ON c.instance_id = i.id
WHERE i.is_latest = 1 AND i.protocol = 'enterprise_rag' GROUP BY d.name"""))
st.dataframe(q("""SELECT mode, COUNT(*) AS count, SUM(origin = 'natural') AS natural, SUM(origin = 'augmented')
AS augmented FROM instance WHERE is_latest = 1 AND protocol = 'enterprise_rag' GROUP BY mode"""))
modes = st.multiselect("Modes", ["noisy", "gap", "conflict"], key="browse_modes")
where = f" AND i.mode IN ({', '.join(repr(m) for m in modes)})" if modes else ""
st.dataframe(q("""SELECT i.uid, d.name AS domain, i.mode, i.origin, i.status,
(SELECT COUNT(*) FROM "constraint" c WHERE c.instance_id = i.id) AS constraints,
(SELECT COUNT(*) FROM document x WHERE x.instance_id = i.id) AS documents, i.query FROM instance i
JOIN domain d ON d.id = i.domain_id WHERE i.is_latest = 1""" + where))
''',
    "leaderboard": '''
st.title("Leaderboard")
where, params = subset()
st.dataframe(q(f"""SELECT m.name AS model, COUNT(*) AS responses, AVG(rm.faithfulness) AS faithfulness,
COUNT(rm.faithfulness) AS n_faithfulness, AVG(rm.coverage) AS coverage, COUNT(rm.coverage) AS n_coverage,
AVG({LOOSE}) AS loose_ias, AVG({STRICT}) AS strict_ias, COUNT({STRICT}) AS n_strict,
AVG(rm.rejection) AS rejection, COUNT(rm.rejection) AS n_rejection,
AVG(rm.conflict_recognition) AS conflict_recognition, COUNT(rm.conflict_recognition) AS n_conflict,
AVG(r.cost_usd) * 1000 AS cost_per_1k, AVG(r.latency_ms) / 60.0 AS latency_min_per_1k
FROM {SCORES} WHERE r.status = 'done'{where} GROUP BY m.name ORDER BY m.name""", judge=JUDGE, **params))
''',
    "domains": '''
st.title("Domains")
where, params = subset()
st.dataframe(q(f"""SELECT m.name AS model, d.name AS domain, AVG(rm.faithfulness) AS faithfulness,
AVG(rm.coverage) AS coverage, AVG({STRICT}) AS strict_ias, AVG({LOOSE}) AS loose_ias, COUNT(*) AS responses
FROM {SCORES} WHERE r.status = 'done'{where} GROUP BY m.name, d.name""", judge=JUDGE, **params))
''',
    "constraint_errors": '''
st.title("Constraint errors")
chosen = st.selectbox("Subset", ["all", "noisy", "gap", "conflict"], key="results_subset")
where = "" if chosen == "all" else " AND f.mode = :mode"
st.dataframe(q(f"""SELECT m.name AS model, f.category, SUM(f.verdicts) AS verdicts, SUM(f.decided) AS decided,
SUM(f.failed) AS failed, SUM(f.failed) * 1.0 / NULLIF(SUM(f.decided), 0) AS failure_rate
FROM failure_count f JOIN model m ON m.id = f.model_id WHERE f.judge = :judge{where}
GROUP BY m.name, f.category""", judge=JUDGE, mode=chosen))
''',
    "robustness": '''
st.title("Robustness")
names = q("SELECT name FROM domain ORDER BY name")["name"].tolist()
chosen = st.multiselect("Domains (empty = all)", names, key="results_domains")
where = f" AND d.name IN ({', '.join(repr(n) for n in chosen)})" if chosen else ""
st.dataframe(q(f"""SELECT m.name AS model, i.mode, EXISTS (SELECT 1 FROM "constraint" c WHERE c.instance_id = i.id
AND c.category = 'knowledge_protocol') AS has_protocol, AVG(rm.rejection) AS rejection,
AVG(rm.conflict_recognition) AS conflict_recognition, AVG(rm.coverage) AS coverage,
AVG(s.passed_knowledge_protocol * 1.0 / NULLIF(s.judged_knowledge_protocol, 0)) AS protocol_adherence, COUNT(*) AS n
FROM {SCORES} WHERE r.status = 'done' AND i.mode IN ('gap', 'conflict'){where} GROUP BY 1, 2, 3""", judge=JUDGE))
''',
    "model_pairs": '''
st.title("Model pairs")
metric = st.selectbox("Metric", ["rejection", "conflict_recognition", "faithfulness", "coverage"], key="mp_metric")
a, b = q("SELECT name FROM model WHERE is_baseline = 0 ORDER BY name LIMIT 2")["name"]
one = f"SELECT i.uid, i.mode, rm.{metric} AS x FROM {SCORES} WHERE m.name = :model AND r.status = 'done'"
st.dataframe(q(f"""SELECT a.mode, COUNT(*) AS n, AVG(a.x) AS mean_a, AVG(b.x) AS mean_b, AVG(a.x - b.x) AS diff
FROM ({one}) a JOIN ({one.replace(':model', ':model_b')}) b ON b.uid = a.uid
WHERE a.x IS NOT NULL AND b.x IS NOT NULL GROUP BY a.mode""", judge=JUDGE, model=a, model_b=b))
''',
    "compare_responses": '''
st.title("Compare responses")
uids = q("SELECT DISTINCT i.uid FROM response r JOIN instance i ON i.id = r.instance_id ORDER BY i.uid")["uid"]
uid = st.selectbox("Instance", uids.tolist(), key="cmp_instance")
st.dataframe(q(f"""SELECT m.name AS model, r.text, rm.faithfulness, rm.coverage, {STRICT} AS strict_ias,
{LOOSE} AS loose_ias FROM {SCORES} WHERE i.uid = :uid""", judge=JUDGE, uid=uid))
''',
    "data_quality": '''
st.title("Data quality")
where, params = subset()
st.dataframe(q(f"""SELECT i.origin, m.name AS model, AVG(rm.conflict_recognition) AS conflict_recognition,
AVG({STRICT}) AS strict_ias, AVG({LOOSE}) AS loose_ias, AVG(rm.coverage) AS coverage,
AVG(rm.faithfulness) AS faithfulness, COUNT(*) AS n FROM {SCORES} WHERE r.status = 'done'{where}
GROUP BY i.origin, m.name""", judge=JUDGE, **params))
st.dataframe(q(f"""SELECT d.name AS domain, i.mode, i.origin, COUNT(DISTINCT i.id) AS instances FROM {SCORES}
WHERE r.status = 'done'{where} GROUP BY 1, 2, 3""", judge=JUDGE, **params))
''',
    "pick_generator": '''
st.title("Pick a generator")
floor = st.slider("Rejection floor", 0, 100, 0, key="pk_floor_rejection")
st.dataframe(q(f"""SELECT m.name AS model, AVG(rm.faithfulness) AS faithfulness, AVG(rm.coverage) AS coverage,
AVG({STRICT}) AS strict_ias, AVG(rm.rejection) AS rejection, AVG(rm.conflict_recognition) AS conflict_recognition,
AVG(r.cost_usd) * 1000 AS cost_per_1k FROM {SCORES} WHERE r.status = 'done' GROUP BY m.name
HAVING COALESCE(AVG(rm.rejection), 0) * 100 >= :floor""", judge=JUDGE, floor=floor))
''',
    "run_evaluation": '''
st.title("Run evaluation")
st.dataframe(q("SELECT name, provider, paradigm, access, is_baseline FROM model ORDER BY name"))
names = q("SELECT name FROM model ORDER BY name")["name"].tolist()
chosen = st.multiselect("Models", names, key="run_models")
if chosen:
    marks = ", ".join(f":m{k}" for k in range(len(chosen)))
    models = {f"m{k}": name for k, name in enumerate(chosen)}
    items = q("SELECT COUNT(*) AS instances FROM instance WHERE is_latest = 1")["instances"].iloc[0] * len(chosen)
    cached = q(f"""SELECT COUNT(*) AS cached FROM response r JOIN model m ON m.id = r.model_id
    WHERE r.status = 'done' AND m.name IN ({marks})""", **models)["cached"].iloc[0]
    st.metric("Items", items)
    st.metric("Cached calls", cached)
runs = q("SELECT id, name, status FROM run ORDER BY id DESC")
st.dataframe(runs)
if len(runs):
    st.dataframe(q("SELECT status, COUNT(*) AS items FROM response WHERE run_id = :run GROUP BY status",
                   run=int(runs["id"].iloc[0])))
''',
    "rag_abilities": _PROTOCOL_PAGE.format(title="RAG abilities", protocols="'lit_ragbench'"),
    "domain_abilities": _PROTOCOL_PAGE.format(title="Domain abilities", protocols="'domainrag'"),
    "misleading_evidence": _PROTOCOL_PAGE.format(title="Misleading evidence", protocols="'misleading_evidence'"),
    "stress_tests": _PROTOCOL_PAGE.format(title="Stress tests", protocols="'kb_corruption'"),
    "protocol_views": '''
from core.protocols.views import with_views

st.title("Protocol views")
name = st.selectbox("Protocol", with_views(), key="pv_protocol")
st.dataframe(q("""SELECT m.name AS model, rm.metric, rm.state, AVG(rm.value) AS value, COUNT(*) AS n
FROM response_metric rm JOIN response r ON r.id = rm.response_id JOIN model m ON m.id = r.model_id
JOIN instance i ON i.id = r.instance_id WHERE i.protocol = :protocol AND rm.judge = :judge
GROUP BY m.name, rm.metric, rm.state""", protocol=name, judge=JUDGE))
''',
    "verify_instances": '''
st.title("Verify instances")
first = q("SELECT id, uid, query FROM instance WHERE is_latest = 1 ORDER BY id LIMIT 1")
st.dataframe(first)
if len(first):
    st.dataframe(q("SELECT title, text FROM document WHERE instance_id = :i ORDER BY position", i=int(first["id"][0])))
    st.dataframe(q('SELECT cid, text FROM "constraint" WHERE instance_id = :i ORDER BY position', i=int(first["id"][0])))
''',
    "label_responses": '''
st.title("Label responses")
st.dataframe(q("SELECT r.id, i.query, r.text FROM assignment a JOIN response r ON r.id = a.target_id "
               "JOIN instance i ON i.id = r.instance_id WHERE a.kind = 'response' ORDER BY a.id LIMIT 1"))
''',
    "judge_alignment": '''
st.title("Judge alignment")
st.dataframe(q("""SELECT v.judge, v.metric, COUNT(*) AS labelled FROM annotation a
JOIN verdict v ON v.response_id = a.target_id WHERE a.target_type = 'response' GROUP BY v.judge, v.metric"""))
''',
    "build_benchmark": '''
st.title("Build benchmark")
st.dataframe(q("SELECT d.name AS domain, i.mode, COUNT(*) AS instances FROM instance i JOIN domain d "
               "ON d.id = i.domain_id WHERE i.is_latest = 1 GROUP BY d.name, i.mode"))
''',
    "adjudicate": '''
st.title("Gold labels & adjudication")
st.dataframe(q("SELECT a.author, a.kind, COUNT(*) AS labels FROM annotation a GROUP BY a.author, a.kind"))
st.dataframe(q("SELECT COUNT(*) AS assignments FROM assignment"))
''',
    "users": '''
st.title("Users")
st.dataframe(q("SELECT username, role FROM user ORDER BY username"))
''',
}


def script(page: str) -> str:
    """The bare reference page for an app page."""
    return PREAMBLE + BODIES[page]


# The second reference: per page, the page's timed filter widget (same kind, key and options as the product's, so one
# change applies to all three) and ONE GROUP BY over the raw verdict table, filtered as the widget says: what any
# results page costs at the least if it aggregated the judges' raw output on every render (issue 42).
_SUBSET = '''chosen = st.selectbox("Subset", ["all", "noisy", "gap", "conflict"], key="results_subset")
where = "" if chosen == "all" else f" AND i.mode = '{chosen}'"
'''
_NONE = 'where = ""\n'
VERDICT_WIDGETS: dict[str, str] = {
    "browse_benchmark": '''modes = st.multiselect("Modes", ["noisy", "gap", "conflict"], key="browse_modes")
where = f" AND i.mode IN ({', '.join(repr(m) for m in modes)})" if modes else ""
''',
    "leaderboard": _SUBSET, "domains": _SUBSET, "constraint_errors": _SUBSET, "data_quality": _SUBSET,
    "robustness": '''names = q("SELECT name FROM domain ORDER BY name")["name"].tolist()
chosen = st.multiselect("Domains (empty = all)", names, key="results_domains")
where = f" AND d.name IN ({', '.join(repr(n) for n in chosen)})" if chosen else ""
''',
    "model_pairs": '''metric = st.selectbox("Metric", ["rejection", "conflict_recognition", "faithfulness", "coverage"],
                      key="mp_metric")
where = f" AND v.metric IN ('{metric}', 'constraint')"
''',
    "compare_responses": '''uids = q("SELECT DISTINCT i.uid FROM response r JOIN instance i ON i.id = r.instance_id ORDER BY i.uid")["uid"]
uid = st.selectbox("Instance", uids.tolist(), key="cmp_instance")
where = f" AND i.uid = '{uid}'"
''',
    "protocol_views": '''from core.protocols.views import with_views

name = st.selectbox("Protocol", with_views(), key="pv_protocol")
where = f" AND i.protocol = '{name}'"
''',
    "pick_generator": '''floor = st.slider("Rejection floor", 0, 100, 0, key="pk_floor_rejection")
where = ""
''',
    "run_evaluation": '''names = q("SELECT name FROM model ORDER BY name")["name"].tolist()
chosen = st.multiselect("Models", names, key="run_models")
where = f" AND m.name IN ({', '.join(repr(n) for n in chosen)})" if chosen else ""
''',
}
VERDICT_GROUP_BY = '''
st.title("Verdicts")
st.dataframe(q(f"""SELECT m.name AS model, v.metric, v.status, COUNT(*) AS n, AVG(v.value) AS mean,
SUM(CASE WHEN v.passed THEN 1 ELSE 0 END) AS passed FROM verdict v JOIN response r ON r.id = v.response_id
JOIN model m ON m.id = r.model_id JOIN instance i ON i.id = r.instance_id JOIN domain d ON d.id = i.domain_id
WHERE v.judge IN (:judge, 'rule'){where} GROUP BY m.name, v.metric, v.status""", judge=JUDGE))
'''


def verdict_script(page: str) -> str:
    """The one-GROUP-BY-over-verdict reference page for an app page (its filter widget, if any, then the query)."""
    return PREAMBLE + VERDICT_WIDGETS.get(page, _NONE) + VERDICT_GROUP_BY
