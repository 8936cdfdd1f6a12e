"""The CLI starts light: `gauntlet --help`, a command's --help and a one-shot `gauntlet ifeval` import only what
they use, and the lazy command table agrees with what the command modules register."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from core.cli import COMMAND_MODULES, COMMANDS, module_commands

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN = [
    ("pandas", "pandas"),
    ("sqlalchemy", "sqlalchemy"),
    ("sqlmodel", "sqlmodel"),
    ("alembic", "alembic"),
    ("scipy", "scipy"),
    ("numba", "numba"),
    ("streamlit", "streamlit"),
]

IFEVAL_INPUT = [
    {"key": 1, "prompt": "Answer in German.", "instruction_id_list": ["language:response_language"],
     "kwargs": [{"language": "de"}]},
    {"key": 2, "prompt": "Shout it.", "instruction_id_list": ["change_case:capital_word_frequency",
                                                              "change_case:english_capital"],
     "kwargs": [{"capital_frequency": 3, "capital_relation": "at least"}, {}]},
]
IFEVAL_RESPONSES = {
    "Answer in German.": "Der Ausschuss hat den Haushalt für das nächste Geschäftsjahr genehmigt.",
    "Shout it.": "I'M TELLING YOU: THE U.S. CEO'S <<PLAN>> IS READY, DON'T WAIT.",
}

_INVOKE = "from core.cli import app\ntry:\n    app({args!r})\nexcept SystemExit:\n    pass\n"
INVOCATIONS = [
    ("import-core-cli", "import core.cli\n"),
    ("gauntlet-help", _INVOKE.format(args=["--help"])),
    ("ifeval-help", _INVOKE.format(args=["ifeval", "--help"])),
    ("checkers-help", _INVOKE.format(args=["checkers", "--help"])),
    ("run-help", _INVOKE.format(args=["run", "--help"])),
    ("models-help", _INVOKE.format(args=["models", "add", "--help"])),
    ("score-help", _INVOKE.format(args=["score", "--help"])),
    ("gate-help", _INVOKE.format(args=["gate", "--help"])),
    ("user-help", _INVOKE.format(args=["user", "add", "--help"])),
    ("lit-ragbench-help", _INVOKE.format(args=["lit-ragbench", "report", "--help"])),
    ("domainrag-help", _INVOKE.format(args=["domainrag", "report", "--help"])),
    ("ifeval-one-shot", "IFEVAL"),
]


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@cache
def _modules_after(name: str, tmp: Path) -> frozenset[str]:
    """Top-level packages imported by a fresh interpreter running invocation `name`."""
    code = dict(INVOCATIONS)[name]
    if code == "IFEVAL":
        inputs, responses = tmp / "in.jsonl", tmp / "responses.jsonl"
        inputs.write_text("".join(json.dumps(row) + "\n" for row in IFEVAL_INPUT))
        responses.write_text("".join(json.dumps({"prompt": p, "response": r}) + "\n"
                                     for p, r in IFEVAL_RESPONSES.items()))
        code = _INVOKE.format(args=["ifeval", "--input-data", str(inputs), "--responses", str(responses)])
    out = _python(code + "import sys, json\nprint(json.dumps(sorted(sys.modules)))\n")
    return frozenset(module.split(".")[0] for module in json.loads(out.splitlines()[-1]))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cli_startup")


@pytest.mark.parametrize("forbidden", [m for _, m in FORBIDDEN], ids=[n for n, _ in FORBIDDEN])
@pytest.mark.parametrize("invocation", [n for n, _ in INVOCATIONS], ids=[n for n, _ in INVOCATIONS])
def test_invocation_does_not_import_heavy_packages(invocation, forbidden, scratch) -> None:
    assert forbidden not in _modules_after(invocation, scratch)


def test_ifeval_one_shot_reports_the_checks(scratch) -> None:
    inputs, responses = scratch / "report_in.jsonl", scratch / "report_responses.jsonl"
    inputs.write_text("".join(json.dumps(row) + "\n" for row in IFEVAL_INPUT))
    responses.write_text("".join(json.dumps({"prompt": p, "response": r}) + "\n" for p, r in IFEVAL_RESPONSES.items()))
    out = _python(_INVOKE.format(args=["ifeval", "--input-data", str(inputs), "--responses", str(responses)]))
    assert "IFEval conformance: 2 prompts" in out and "prompt-level accuracy:      1.000" in out


def _table(module: str) -> dict[str, str]:
    return {name: help_ for name, mod, help_ in COMMANDS if mod == module}


@pytest.mark.parametrize("module", COMMAND_MODULES, ids=[m.removeprefix("core.") for m in COMMAND_MODULES])
def test_command_table_names_what_the_module_registers(module) -> None:
    registered = module_commands(module)
    assert sorted(registered) == sorted(_table(module))
    for name, command in registered.items():
        assert (command.short_help or command.help or "").strip().split("\n\n")[0] == _table(module)[name], name


def test_every_command_module_is_in_the_table() -> None:
    paths = [*(ROOT / "core" / "commands").glob("*.py"), *(ROOT / "core" / "protocols").glob("*/command.py")]
    modules = {".".join(path.relative_to(ROOT).with_suffix("").parts) for path in paths
               if "\ndef register(" in path.read_text(encoding="utf-8")}
    assert modules == set(COMMAND_MODULES)


SWITCH_CASES = [
    ("first-detections-use-langdetect", 2, 2, False),
    ("later-detections-use-the-compiled-port", 2, 4, True),
    ("compiled-from-the-start", 0, 1, True),
]


@pytest.mark.parametrize(("after", "calls", "compiled"), [c[1:] for c in SWITCH_CASES],
                         ids=[c[0] for c in SWITCH_CASES])
def test_language_detection_switches_to_the_compiled_port(after, calls, compiled) -> None:
    texts = ["Der Ausschuss hat den Haushalt genehmigt.", "The committee approved the budget.",
             "Le comité a approuvé le budget.", "12345"]
    code = (f"import sys, json, core.language as L\nL.COMPILED_AFTER = {after}\n"
            f"texts = {texts!r}[:{calls}]\nanswers = [L.langdetect_language(t) for t in texts]\n"
            "print(json.dumps([answers, [L.langdetect_itself(t) for t in texts], 'numba' in sys.modules]))\n")
    answers, reference, loaded = json.loads(_python(code).splitlines()[-1])
    assert answers == reference
    assert loaded is compiled


def test_treebank_tokenizer_leaves_nltk_importable() -> None:
    code = ("import sys, json\nfrom core.scoring.checkers.text import _treebank\n"
            "text = \"I'M TELLING YOU: THE U.S. CEO'S <<PLAN>>, DON'T WAIT.\"\nours = _treebank().tokenize(text)\n"
            "light = sorted(m for m in ('nltk', 'scipy') if m in sys.modules)\n"
            "import nltk\nprint(json.dumps([ours, nltk.word_tokenize(text, preserve_line=True), light]))\n")
    ours, theirs, light = json.loads(_python(code).splitlines()[-1])
    assert ours == theirs
    assert light == []
