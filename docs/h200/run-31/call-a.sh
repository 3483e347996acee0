#!/usr/bin/env bash
# Run 31, call A: the build of this session (detector folder renamed, trusted library places,
# rubric [requires] with all-or-nothing correctness). The 30-submission grading batch of runs
# 26-30 (secret 20261202) regraded with the shipped rubric; every sample folder graded and
# compared with its expected.toml (ci/check-grades); the matrix; the corpus gate with
# ci/check-corpus. The pack is made whatever happens, under a hard deadline.
set -u
A="$OUT/a"; mkdir -p "$A"
RG=$PWD/.gpu/racegate
. docs/h200/run-30/lib.sh
( sleep 520; pkill -f racegate; pkill -f compute-sanitizer ) >/dev/null 2>&1 &
W=$!
monitors
env_txt
batch30
step grade30 timeout 150 bash -c "$(declare -f grade30); A=$A RG=$RG B=$B; grade30 grade30"
grade_samples() {
  local subs=harness/tests/submissions
  for d in "$subs"/*/; do
    local folder; folder=$(basename "$d")
    local ex; ex=$(python3 -c "import tomllib,sys; print(tomllib.load(open(sys.argv[1],'rb')).get('exercise', sys.argv[2]))" "$d/expected.toml" "$folder")
    local extra; extra=$(python3 -c "import tomllib,sys; print(' '.join(tomllib.load(open(sys.argv[1],'rb')).get('args', [])))" "$d/expected.toml")
    echo "== $folder as $ex $extra"
    "$RG" grade --exercise "$ex" "$d" --sanitize-timeout 20 $extra --format json --jobs 4 --output "$A/grade-$folder.json"
    echo "exit $?"
  done
  for f in no_bounds_check cheat_no_write sync_inside_if; do
    "$RG" grade --exercise reduce --sanitize-timeout 20 "$subs/reduce/$f.cu"
    "$RG" grade --exercise reduce --lang ko --sanitize-timeout 20 "$subs/reduce/$f.cu"
  done
}
step samples timeout 260 bash -c "$(declare -f grade_samples); A=$A RG=$RG; grade_samples"
step check_grades python3 ci/check-grades "$A"
step check timeout 150 env RACEGATE_TIMELINE="$A/timeline-check.tsv" "$RG" check --table "$A/matrix.md" --json "$A/check.json"
step corpus timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus"
stop_monitors
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
date -u >> "$A/env.txt"
tar czf "$OUT/a.tgz" -C "$OUT" a && rm -rf "$A"
ls -la "$OUT"
