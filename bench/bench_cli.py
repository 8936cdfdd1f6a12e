"""Time whole CLI processes, interleaved (hyperfine-like): `gauntlet --help` and a one-shot `gauntlet ifeval` over
the 541 shared IFEval responses, against the IFEval reference's own `evaluation_main` on the same inputs.

Run: python bench/bench_cli.py [--runs N] [--before DIR] [--reference-dir DIR]
Each round runs every command once, in a rotating order, so load on a shared machine falls on all of them alike.
Per command: best and median wall seconds, and best and median CPU seconds (user + system of the child, from
resource.getrusage), then the ratios of ours to the reference measured in the same rounds.
--before DIR: also time an older checkout of this project (e.g. `git worktree add DIR <commit>`) run from DIR.
--reference-dir DIR: the reference, laid out as DIR/src/instruction_following_eval/ (google-research's
instruction_following_eval), DIR/venv/bin/python with absl-py, immutabledict, langdetect and nltk, and
DIR/nltk_data/tokenizers/punkt_tab/english (the punkt model the reference loads). Without it the reference is skipped.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "ifeval"
INPUTS, RESPONSES = SHARED / "input_data.jsonl", SHARED / "input_response_data_gpt4.jsonl"


def _gauntlet(checkout: Path | None) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run this project's CLI (or an older checkout's)."""
    env = dict(os.environ)
    if checkout is None:
        script = Path(sys.executable).with_name("gauntlet")
        return ([str(script)] if script.is_file() else [sys.executable, "-m", "core.cli"]), env
    env["PYTHONPATH"] = str(checkout)
    return [sys.executable, "-m", "core.cli"], env


def commands(before: Path | None, reference: Path | None, out_dir: Path) -> dict[str, tuple[list[str], dict, Path]]:
    """name -> (argv, environment, working directory) of every timed command."""
    ifeval = ["ifeval", "--input-data", str(INPUTS), "--responses", str(RESPONSES)]
    table = {}
    for label, checkout in (("", None), ("before ", before)):
        if label and checkout is None:
            continue
        argv, env = _gauntlet(checkout)
        cwd = checkout or ROOT
        table[f"{label}gauntlet --help"] = (argv + ["--help"], env, cwd)
        table[f"{label}gauntlet ifeval"] = (argv + ifeval, env, cwd)
    if reference is not None:
        env = dict(os.environ, PYTHONPATH=str(reference / "src"), NLTK_DATA=str(reference / "nltk_data"))
        argv = [str(reference / "venv" / "bin" / "python"), "-m", "instruction_following_eval.evaluation_main",
                f"--input_data={INPUTS}", f"--input_response_data={RESPONSES}", f"--output_dir={out_dir}"]
        table["reference evaluation_main"] = (argv, env, reference)
    return table


def time_once(argv: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run of the command; a failing command stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, check=False, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    """Time the commands in interleaved rounds and print best / median wall and CPU, and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--before", type=Path, help="An older checkout of this project to time as well.")
    parser.add_argument("--reference-dir", type=Path, help="The IFEval reference laid out as described above.")
    args = parser.parse_args()
    reference = args.reference_dir if args.reference_dir and (args.reference_dir / "venv").is_dir() else None
    if reference is None:
        print("reference: not given or not found; timing this project's commands only")
    with tempfile.TemporaryDirectory() as out_dir:
        table = commands(args.before, reference, Path(out_dir))
        names = list(table)
        for name in names:  # warm the file cache and compiled bytecode once, untimed
            time_once(*table[name])
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
        for round_ in range(args.runs):
            for name in names[round_ % len(names):] + names[: round_ % len(names)]:
                samples[name].append(time_once(*table[name]))
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.runs} runs each")
    print(f"{'command':<34}{'wall best':>10}{'wall median':>12}{'cpu best':>10}{'cpu median':>11}")
    summary = {}
    for name in names:
        walls, cpus = [w for w, _ in samples[name]], [c for _, c in samples[name]]
        summary[name] = (min(walls), statistics.median(walls), min(cpus), statistics.median(cpus))
        print(f"{name:<34}" + "".join(f"{v:>{w}.3f}" for v, w in zip(summary[name], (10, 12, 10, 11), strict=True)))
    pairs = [("gauntlet ifeval", "reference evaluation_main"), ("gauntlet --help", "before gauntlet --help"),
             ("gauntlet ifeval", "before gauntlet ifeval")]
    for ours, theirs in pairs:
        if ours in summary and theirs in summary:
            ratios = [a / b for a, b in zip(summary[ours], summary[theirs], strict=True)]
            print(f"{ours} / {theirs}: wall best {ratios[0]:.2f}, wall median {ratios[1]:.2f}, "
                  f"cpu best {ratios[2]:.2f}, cpu median {ratios[3]:.2f}")


if __name__ == "__main__":
    main()
