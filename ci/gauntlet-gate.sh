#!/usr/bin/env bash
# The steps of the `gauntlet gate` GitHub Action (action.yml), runnable anywhere: import a benchmark set, register the
# baseline and the candidate model configurations, run both on the set (cached calls are free), score them, gate.
# Exit code: the gate's (0 pass, 2 significant regression, 1 could not decide, 64 usage error). Outputs in $GAUNTLET_OUT:
# gate.md (the pull-request comment) and gate.json.
#
# Environment:
#   GAUNTLET_BENCHMARK   JSONL benchmark set (native interchange format)            required
#   GAUNTLET_BASELINE    JSON model configuration of the baseline                   required
#   GAUNTLET_CANDIDATE   JSON model configuration of the candidate (the PR's)       required
#   GAUNTLET_RULES       rules file                                                 default gauntlet-gate.yaml
#   GAUNTLET_JUDGE       judge for both runs                                        default heuristic
#   GAUNTLET_REPEATS     answers per item                                           default 1
#   GAUNTLET_OUT         output directory                                           default gauntlet-gate-out
#   GAUNTLET_DATABASE_URL database (keep it in a CI cache to reuse paid calls)      default sqlite in $GAUNTLET_OUT
#   GAUNTLET_CMD         how to call the CLI                                        default gauntlet
# A model configuration is {"name", "provider", "model_name", "settings": {...}, "price_in", "price_out",
# "temperature", "max_output_tokens"}; keys come from the environment (settings api_key_env / base_url_env).
set -euo pipefail

: "${GAUNTLET_BENCHMARK:?set GAUNTLET_BENCHMARK to a JSONL benchmark set}"
: "${GAUNTLET_BASELINE:?set GAUNTLET_BASELINE to the baseline model configuration (JSON)}"
: "${GAUNTLET_CANDIDATE:?set GAUNTLET_CANDIDATE to the candidate model configuration (JSON)}"
RULES="${GAUNTLET_RULES:-gauntlet-gate.yaml}"
JUDGE="${GAUNTLET_JUDGE:-heuristic}"
REPEATS="${GAUNTLET_REPEATS:-1}"
OUT="${GAUNTLET_OUT:-gauntlet-gate-out}"
read -r -a CLI <<< "${GAUNTLET_CMD:-gauntlet}"
PY="${GAUNTLET_PYTHON:-python}"
mkdir -p "$OUT"
export GAUNTLET_DATABASE_URL="${GAUNTLET_DATABASE_URL:-sqlite:///$(cd "$OUT" && pwd)/gauntlet.db}"

model_args() {  # the `gauntlet models add` arguments of a JSON model configuration, one per line
  "$PY" -c 'import json, sys; from core.commands.gate import model_args; print("\n".join(model_args(json.load(open(sys.argv[1])))))' "$1"
}

domains() {  # the comma-separated domains of the benchmark set, so only its instances run
  "$PY" -c 'import json, sys; print(",".join(sorted({json.loads(l)["domain"] for l in open(sys.argv[1]) if l.strip()})))' "$1"
}

run_model() {  # run and score one model on the set; prints the run id
  local name="$1" out
  out=$("${CLI[@]}" run --models "$name" --domains "$(domains "$GAUNTLET_BENCHMARK")" --judge "$JUDGE" \
        --repeats "$REPEATS" --name "gate:$name" --quiet 2>&1) || { echo "$out" >&2; return 1; }
  echo "$out" >&2
  sed -n 's/^run \([0-9]*\) created$/\1/p' <<< "$out"
}

"${CLI[@]}" init-db >&2
"${CLI[@]}" import "$GAUNTLET_BENCHMARK" >&2
mapfile -t BASE_ARGS < <(model_args "$GAUNTLET_BASELINE")
mapfile -t CAND_ARGS < <(model_args "$GAUNTLET_CANDIDATE")
"${CLI[@]}" models add "${BASE_ARGS[@]}" >&2
"${CLI[@]}" models add "${CAND_ARGS[@]}" >&2
BASE_RUN=$(run_model "${BASE_ARGS[0]}")
CAND_RUN=$(run_model "${CAND_ARGS[0]}")
set +e
"${CLI[@]}" gate "$BASE_RUN" "$CAND_RUN" --rules "$RULES" --judge "$JUDGE" --markdown "$OUT/gate.md" --json "$OUT/gate.json"
code=$?
set -e
if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then cat "$OUT/gate.md" >> "$GITHUB_STEP_SUMMARY"; fi
exit "$code"
