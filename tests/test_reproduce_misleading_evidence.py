"""docs/misleading_evidence.md, "Reproducing Table 1", run as written: its bash block's commands (build from the shared
slices, import, run, score, reproduce) through the CLI against a fresh database, the models being scripted ones on
the loopback fake server; the printed table has the paper's shape and the calibration values."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.config import REPO_ROOT
from core.protocols.misleading_evidence.paper import COLUMNS, MEAN_ROW
from core.protocols.prompting import SOURCE_POLICIES
from core.store.db import make_engine
from core.store.schema import InstanceSpec
from core.testing.fake_server import ScriptRule
from tests.docs_blocks import bash_commands
from tests.factories import scripted_models
from tests.misleading_evidence.conftest import edited_sentence, prompt_rules, replies

# One xdist worker runs this module: its expensive module-scoped fixtures are built once, not once per worker
pytestmark = pytest.mark.xdist_group("reproduce-misleading-evidence")

DOC = REPO_ROOT / "docs" / "misleading_evidence.md"
SHARED = REPO_ROOT.parent / "shared"
DATASETS = ["HotpotQA (en)", "MedQA (en)", "MedQA (zh)"]
MODELS = ["doc-only", "follower", "gold", "wrong"]


def scripts(instances: list[InstanceSpec]) -> dict[str, list[ScriptRule]]:
    """gold: always the gold answer; follower: the designated wrong answer whenever the edited sentence is shown;
    doc-only: misled only when told the documents take priority; wrong: always another wrong answer."""
    out: dict[str, list[ScriptRule]] = {name: [] for name in MODELS}
    priority = re.escape(SOURCE_POLICIES["documents"])
    for spec in instances:
        r = replies(spec)
        out["gold"] += prompt_rules(spec, r.gold, r.gold, r.gold)
        out["follower"] += prompt_rules(spec, r.designated, r.gold, r.gold)
        out["wrong"] += prompt_rules(spec, r.other, r.other, r.other)
        edited, question = re.escape(edited_sentence(spec, "misleading")), re.escape(spec.query.strip()[:80])
        out["doc-only"] += [ScriptRule(match=f"(?s)^(?=.*{priority})(?=.*{edited}).*{question}", reply=r.designated),
                            *prompt_rules(spec, r.gold, r.gold, r.gold)]
    return out


def built(folder: Path) -> list[InstanceSpec]:
    """Every RAG-Stress instance the docs' build commands wrote."""
    return [InstanceSpec.model_validate(json.loads(line)) for path in sorted(folder.glob("*.jsonl"))
            if not path.name.endswith(".skipped.jsonl") for line in path.read_text(encoding="utf-8").splitlines()]


@dataclass(frozen=True)
class Reproduced:
    output: str
    run_id: int


def run_docs(url: str, workdir: Path) -> Reproduced:
    """Run the docs' commands in `workdir` (../shared beside it) on `url`; the output of the last one."""
    variables = {"MODELS": ",".join(MODELS)}
    runner, output, run_id = CliRunner(), "", 0
    with ExitStack() as stack:
        for command in bash_commands(DOC, "Reproducing Table 1"):
            if (assignment := re.fullmatch(r"([A-Z_]+)=(\S+)", command)):
                variables.setdefault(assignment.group(1), assignment.group(2))
                continue
            args = shlex.split(re.sub(r"\$([A-Z_]+)", lambda m: variables[m.group(1)], command))
            assert args[0] == "gauntlet", command
            if args[1] == "run":
                stack.enter_context(scripted_models(make_engine(url), scripts(built(workdir / "var"
                                                                                    / "misleading_evidence"))))
            result = runner.invoke(app, args[1:])
            assert result.exit_code == 0, (command, result.output)
            if args[1] == "run":
                run_id = int(re.search(r"run (\d+) created", result.output).group(1))
                variables["RUN"] = str(run_id)
            output = result.stdout
    return Reproduced(output, run_id)


@pytest.fixture(scope="module")
def reproduced(session_url_factory, tmp_path_factory) -> Iterator[Reproduced]:
    if not SHARED.is_dir():
        pytest.fail(f"shared datasets not found at {SHARED} (CI lays ../shared beside the repo)")
    root = tmp_path_factory.mktemp("reproduce")
    (root / "shared").symlink_to(SHARED)
    workdir = root / "repo"
    workdir.mkdir()
    url = session_url_factory()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(workdir)
        patch.setenv("GAUNTLET_DATABASE_URL", url)
        yield run_docs(url, workdir)


def cells(markdown: str) -> dict[tuple[str, str], str]:
    """(row label, column) -> cell text of the printed Markdown table."""
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split(" | ")]
    assert tuple(header) == COLUMNS
    out = {}
    for line in lines[1:]:
        row = [c.strip() for c in line.strip().strip("|").split(" | ")]
        out.update({(row[0], column): cell for column, cell in zip(header[1:], row[1:], strict=True)})
    return out


def test_table_has_the_papers_shape(reproduced) -> None:
    table = cells(reproduced.output)
    labels = list(dict.fromkeys(label for label, _ in table))
    assert labels == [f"{d} · {m}" for d in DATASETS for m in [*MODELS, MEAN_ROW]]
    assert "Judge: heuristic" in reproduced.output and "Small n (n < 30)" in reproduced.output


CALIBRATION = [  # (model, column, value printed, or the start of the cell's 'why no value')
    pytest.param("gold", "Clean acc.", "100.0", id="gold-clean"),
    pytest.param("gold", "MR docs · end", "0.0", id="gold-never-misled"),
    pytest.param("gold", "Gap docs − prior", "0.0", id="gold-no-gap"),
    pytest.param("follower", "MR docs · beginning", "100.0", id="follower-docs"),
    pytest.param("follower", "MR prior · end", "100.0", id="follower-prior"),
    pytest.param("follower", "Gap docs − prior", "0.0", id="follower-no-gap"),
    pytest.param("doc-only", "MR docs · middle", "100.0", id="doc-only-docs"),
    pytest.param("doc-only", "MR prior · middle", "0.0", id="doc-only-prior"),
    pytest.param("doc-only", "Gap docs − prior", "100.0", id="doc-only-gap"),
    pytest.param("wrong", "Clean acc.", "0.0", id="wrong-clean"),
    pytest.param("wrong", "MR docs · end", "— (no closed-book-correct question", id="wrong-nothing-known"),
    # Means over the models with a value: clean (1 + 1 + 1 + 0) / 4; MR docs (1 + 1 + 0) / 3; gap (1 + 0 + 0) / 3.
    pytest.param(MEAN_ROW, "Clean acc.", "75.0", id="mean-clean"),
    pytest.param(MEAN_ROW, "MR docs · end", "66.7", id="mean-mr"),
    pytest.param(MEAN_ROW, "Gap docs − prior", "33.3", id="mean-gap"),
]


@pytest.mark.parametrize("dataset", DATASETS, ids=DATASETS)
@pytest.mark.parametrize(("model", "column", "expected"), CALIBRATION)
def test_calibration_values(reproduced, dataset, model, column, expected) -> None:
    cell = cells(reproduced.output)[(f"{dataset} · {model}", column)]
    assert cell.startswith(expected) and (cell[len(expected):][:1] in (" ", ";")), cell



def test_table_counts_the_states_behind_it(reproduced) -> None:
    """Every scored response behind a model row's clean-accuracy and MR cells: 4 models x 11 clean answers, plus the
    3 models that know the answer closed-book x 6 misleading conditions x 11; `wrong` knows none (MR: n = 0)."""
    model_cells = [cell for (row, column), cell in cells(reproduced.output).items()
                   if not row.endswith(MEAN_ROW) and column != "Gap docs − prior"]
    n = sum(int(re.search(r"n = (\d+)\)$", cell).group(1)) for cell in model_cells)
    assert n == 4 * 11 + 3 * 6 * 11
    assert (f"- States behind the table (summed over its cells): {n} scored · 0 not applicable · 0 unparseable · "
            "0 judge errors · 0 unjudged · 0 skipped.") in reproduced.output
