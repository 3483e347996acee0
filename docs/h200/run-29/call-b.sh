#!/usr/bin/env bash
# Run 29, call B: call A's script with the build after it: a failure's stress verdict before its minimal-repro search (counted as a stress run still), own-tool batches regrouped when their only verdicts are findings, the matrix's racecheck and initcheck flag-expected cases in batches, grading's faulting trials side by side, the matrix's own-tool cells queued until the tool is built, the gate's racecheck cut after a hang 15 s, memcheck runs a kernel whose stress run faulted alone (and the fixes of a review). Call A's notes follow: builds ahead beside the runs (the
# matrix's and the gate's pools start at once; racegate's own tool builds beside them), a stress
# slot's worker closed behind its next job, a fault's confirm reruns side by side, and a
# compute-sanitizer batch's findings at lines of one case's code taken as that case's (a
# line-less record beside some cases' findings regroups the others). The matrix at the default
# jobs; the corpus gate twice at the default; the 30-submission grading batch of runs 26-28.
# The pack is made whatever happens.
set -u
export LC_ALL=C
A="$OUT/b"; mkdir -p "$A"
RG=$PWD/.gpu/racegate
( sleep 480; pkill -f racegate; pkill -f compute-sanitizer ) >/dev/null 2>&1 &
W=$!
vmstat -t 1 > "$A/vmstat.txt" 2>&1 &
V=$!
nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory --format=csv -lms 1000 > "$A/gpu-util.csv" 2>&1 &
G=$!
now() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
step() { # name, then the command (run in a subshell); times each into steps.txt
  local name=$1; shift
  local s; s=$(now)
  echo "=== $name start $s" >> "$A/steps.txt"
  ( "$@" ) > "$A/$name.txt" 2>&1
  local rc=$?
  local e; e=$(now)
  echo "=== $name end $e rc $rc wall $(python3 -c "print(f'{$e - $s:.1f}')") s" >> "$A/steps.txt"
}
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; compute-sanitizer --version; nproc; } > "$A/env.txt" 2>&1

step check timeout 150 env RACEGATE_TIMELINE="$A/timeline-check.tsv" "$RG" check --table "$A/matrix.md" --json "$A/check.json"

TOOLS=racecheck,synccheck,memcheck,initcheck,globalcheck,sharedcheck,fencecheck
corpus() { # name
  cd examples/corpus && rm -f racegate-baseline.json
  env RACEGATE_TIMELINE="$A/timeline-$1.tsv" "$RG" gate --tools $TOOLS --trials 100 \
    --sanitize-timeout 20 --timeout 5 --sarif "$A/$1.sarif" --junit "$A/$1-junit.xml" --summary "$A/$1-summary.md"
  echo "gate exit $?"
  cd ../.. && python3 ci/check-corpus "$A/$1.sarif"
}
(cd examples/corpus && timeout 120 "$RG" compile > "$A/corpus-compile.txt" 2>&1)
step corpus1 timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus1"
step corpus2 timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus2"

B=$(mktemp -d)/batch30; mkdir -p "$B"
i=0
files=(harness/tests/submissions/reduce/*.cu)
while [ $i -lt 30 ]; do
  f=${files[$((i % ${#files[@]}))]}
  cp "$f" "$B/s$(printf %02d $((i + 1)))_$(basename "$f")"
  i=$((i + 1))
done
echo 20261202 > "$B/../secret"
ls "$B" >> "$A/env.txt"
step grade timeout 150 env RACEGATE_TIMELINE="$A/timeline-grade.tsv" "$RG" grade --exercise reduce "$B" \
  --secret-file "$B/../secret" --format json --output "$A/grade.json"

kill $V $G 2>/dev/null
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
date -u >> "$A/env.txt"
tar czf "$OUT/b.tgz" -C "$OUT" b && rm -rf "$A"
ls -la "$OUT"
