"""The regex budget of scoring: the time limit applies per response across all its patterns, a pattern that ran over
once is not tried again in the scoring pass (its later uses are checker errors naming the first timeout), and
`validate` warns (exit 0) about patterns with nested quantifiers."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
import time
import types
from collections.abc import Callable

import pytest
from sqlmodel import Session, col, select
from typer.testing import CliRunner

from core.cli import app
from core.generation import runner, runs
from core.ingest.io import import_file
from core.pipeline import score_and_summarise
from core.scoring.checkers import build_checker, guard
from core.scoring.checkers.guard import RegexPass, RegexTimeout
from core.store.models import Constraint, Verdict
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.factories import add_model
from tests.faults.conftest import figure
from tests.faults.test_hostile_regex import REPLY, instance_with
from tests.providers.conftest import point_sdks_at

LIMIT = 0.2
HOSTILE = {  # six catastrophic patterns, one per checker that takes a user regex; REPLY ("a" * 40 + "!") fails them all
    "enterprise:citation_count": {"pattern": "(a+)+$"},
    "keywords:existence": {"keywords": ["(a*)*$"]},
    "keywords:frequency": {"keyword": "((a+))+$", "frequency": 1, "relation": "at least"},
    "keywords:forbidden_words": {"forbidden_words": ["(a|aa)+$"]},
    "detectable_content:postscript": {"postscript_marker": "(a+)+b"},
    "detectable_format:multiple_sections": {"section_spliter": "(aa?)+", "num_sections": 2},
}


def _outcome(checker_id: str, kwargs: dict) -> str:
    try:
        build_checker(checker_id, kwargs).check(REPLY)
    except RegexTimeout as exc:
        return str(exc)
    return "matched"


def _in_worker(work: Callable[[], None]) -> None:
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()


@pytest.mark.parametrize("where, restart_s", [
    pytest.param(lambda work: work(), 0.0, id="main-thread-alarm"),
    pytest.param(_in_worker, 2.5, id="worker-thread-helper-process"),  # helper restart: ~0.6 s, >1 s loaded
])
def test_one_response_spends_at_most_the_limit_on_all_its_patterns(where, restart_s, monkeypatch) -> None:
    monkeypatch.setenv("GAUNTLET_REGEX_TIME_LIMIT_S", str(LIMIT))
    responses, outcomes, scoring = 4, [], RegexPass()

    def work() -> None:
        for n in range(responses):  # fresh patterns for every response: only the per-response budget bounds them
            with scoring.response(f"response {n}"):
                outcomes.extend(_outcome("enterprise:citation_count", {"pattern": f"(a+)+(?:x{n}_{k})?$"})
                                for k in range(6))

    started = time.monotonic()
    where(work)
    seconds = time.monotonic() - started
    figure(f"{responses} responses x 6 fresh hostile patterns, limit {LIMIT} s: {seconds:.2f} s "
           f"(a limit per pattern: {responses * 6 * LIMIT:.1f} s)")
    assert sum("ran over the 0.2 s limit" in o for o in outcomes) == responses
    assert sum("regex budget for this response spent" in o for o in outcomes) == responses * 5
    assert seconds < responses * (LIMIT + restart_s) + 1.5


BENIGN = {"pattern": "a+!$"}
RAN_OVER = "ran over the 0.2 s limit (catastrophic backtracking?)"
RAN_OVER_LEFTOVER = "ran over the 0.06 s left of this response's 0.2 s regex budget"
NOT_TRIED_AGAIN = "not tried: it ran over its share of the 0.2 s regex budget earlier in this scoring pass (response 0)"
SPENT = "not tried: regex budget for this response spent"


@pytest.mark.parametrize("spent, kwargs, first, second, blamed", [
    pytest.param(0.0, HOSTILE["enterprise:citation_count"], RAN_OVER, NOT_TRIED_AGAIN, ["response 0"],
                 id="full-budget-timed-out-not-tried-again"),
    pytest.param(0.7, HOSTILE["enterprise:citation_count"], RAN_OVER_LEFTOVER, NOT_TRIED_AGAIN, ["response 0"],
                 id="small-leftover-over-the-floor-timed-out-not-tried-again"),
    pytest.param(0.95, HOSTILE["enterprise:citation_count"], SPENT, RAN_OVER, ["response 1"],
                 id="below-the-floor-hostile-not-run-not-blamed"),
    pytest.param(0.95, BENIGN, SPENT, "matched", [], id="below-the-floor-benign-not-run"),
    pytest.param(0.7, BENIGN, "matched", "matched", [], id="small-leftover-over-the-floor-benign-runs"),
])
def test_a_pattern_runs_only_with_a_fair_share_and_once_timed_out_is_not_tried_again(monkeypatch, spent, kwargs,
                                                                                    first, second, blamed) -> None:
    monkeypatch.setenv("GAUNTLET_REGEX_TIME_LIMIT_S", str(LIMIT))
    scoring = RegexPass()
    with scoring.response("response 0"):
        guard._BUDGET.get().spent = LIMIT * spent  # the patterns before this one took that share of the budget
        squeezed = _outcome("enterprise:citation_count", kwargs)
    with scoring.response("response 1"):
        full = _outcome("enterprise:citation_count", kwargs)
    assert first in squeezed, squeezed
    assert second in full, full
    assert list(scoring.timed_out.values()) == blamed


def test_a_scoring_pass_tries_a_pattern_that_ran_over_no_more(engine, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("GAUNTLET_REGEX_TIME_LIMIT_S", str(LIMIT))
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    responses = 30
    record = instance_with("enterprise:citation_count", HOSTILE["enterprise:citation_count"])
    record["constraints"] = [c for c in record["constraints"] if c["id"] != "hostile"] + [
        {**record["constraints"][-1], "id": f"hostile{k}", "checker_id": checker, "checker_kwargs": kwargs}
        for k, (checker, kwargs) in enumerate(HOSTILE.items())]
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(record | {"id": f"hostile-{n}"}) + "\n" for n in range(responses)),
                    encoding="utf-8")
    assert import_file(engine, path).ok
    add_model(engine, "gpt-x", "openai")
    with FakeLLMServer([ScriptRule(match="", reply=REPLY)]) as server:
        point_sdks_at(monkeypatch, server)
        run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-x"]))
        assert asyncio.run(runner.execute_run(engine, run_id)).status == "done"

    started = time.monotonic()
    report = asyncio.run(score_and_summarise(engine, run_id, ["heuristic"])).scores[0]
    seconds = time.monotonic() - started
    with Session(engine) as session:
        rows = session.exec(select(Constraint.checker_kwargs, Verdict.response_id, Verdict.status, Verdict.reason)
                            .join(Verdict, col(Verdict.constraint_id) == Constraint.id)
                            .where(col(Constraint.cid).startswith("hostile")).order_by(Verdict.id)).all()
    figure(f"{responses} responses x {len(HOSTILE)} hostile patterns, limit {LIMIT} s: scored in {seconds:.2f} s "
           f"(a limit per pattern and response: {responses * len(HOSTILE) * LIMIT:.0f} s)")
    assert len(rows) == responses * len(HOSTILE) and {status for _, _, status, _ in rows} == {"error"}
    assert report.errors == {"constraint": responses * len(HOSTILE)}
    first: dict[str, int] = {}
    for kwargs, response_id, _, reason in rows:
        key = json.dumps(kwargs, sort_keys=True)
        if "ran over the 0.2 s limit (catastrophic" in reason:
            assert key not in first, reason
            first[key] = response_id
        elif key in first:
            assert re.search(rf"not tried: it ran over .* earlier in this scoring pass \(response {first[key]}\)",
                             reason), reason
        else:
            assert "regex budget for this response spent" in reason, reason
    assert len(first) == len(HOSTILE)
    assert seconds < len(HOSTILE) * LIMIT + 8.0


@pytest.mark.parametrize("checker_id, kwargs, field, warned", [
    pytest.param("enterprise:citation_count", {"pattern": "(a+)+$"}, "pattern", True, id="plus-in-plus"),
    pytest.param("keywords:existence", {"keywords": ["fine", r"(\w*)*x"]}, "keywords[1]", True, id="star-in-star"),
    pytest.param("detectable_content:postscript", {"postscript_marker": "P(A+)+S"}, "postscript_marker", True,
                 id="postscript-marker"),
    pytest.param("keywords:existence", {"keywords": ["(ab)+", r"\d+"]}, "keywords", False, id="single-quantifiers"),
    pytest.param("keywords:existence", {"keywords": ["(a++)+"]}, "keywords", False, id="possessive-inside"),
])
def test_validate_warns_on_nested_quantifiers_without_failing(checker_id, kwargs, field, warned, tmp_path) -> None:
    path = tmp_path / "nested.jsonl"
    path.write_text(json.dumps(instance_with(checker_id, kwargs)) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning: ")]
    assert "1 valid instances" in result.output
    if warned:
        assert len(warnings) == 1 and f"constraints[8].checker_kwargs.{field}: regex" in warnings[0], warnings
        assert "has nested quantifiers" in warnings[0] and "1 warning(s)" in result.output
    else:
        assert not warnings, warnings


def test_a_helper_process_that_died_on_its_own_is_replaced(monkeypatch) -> None:
    monkeypatch.setenv("GAUNTLET_REGEX_TIME_LIMIT_S", "5")
    found: list[object] = []

    def work() -> None:
        assert guard.guarded("a+").search("caaat") is not None  # starts the helper process
        helper = guard._HELPER
        assert helper is not None
        for process in list(getattr(helper, "_processes", {}).values()):
            process.kill()  # dies under the scorer (OOM killer, a crash), not at a limit
            process.join()
        found.append(guard.guarded("b+").search("cbbbt"))

    _in_worker(work)
    assert found and found[0] is not None and found[0].group() == "bbb"


def test_the_helper_process_does_not_run_the_parents_main_script_again(tmp_path, monkeypatch) -> None:
    """A Streamlit page (or any script) as __main__ must not run again in the spawned helper (it crashed there)."""
    script = tmp_path / "page.py"
    script.write_text("raise SystemExit('the parent script ran again in the regex helper')\n", encoding="utf-8")
    page = types.ModuleType("__main__")
    page.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", page)
    monkeypatch.setenv("GAUNTLET_REGEX_TIME_LIMIT_S", "5")
    found: list[object] = []
    earlier, guard._HELPER = guard._HELPER, None  # a fresh helper, started with the page script as __main__
    try:
        _in_worker(lambda: found.append(guard.guarded("b+").search("cbbbt")))
    finally:
        if guard._HELPER is not None:
            guard._HELPER.shutdown(wait=False, cancel_futures=True)
        guard._HELPER = earlier
    assert found and found[0] is not None and found[0].group() == "bbb"
    assert sys.modules["__main__"] is page
