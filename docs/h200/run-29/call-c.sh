#!/usr/bin/env bash
# Run 29, call C: call B's build again (`85923ec`; only tests and docs changed since): the matrix
# once more on another machine start, and the corpus gate with 4 and with 12 stress runs at once
# (RACEGATE_STRESS_AT_ONCE; the default is 8). No grading. The pack is made whatever happens.
set -u
export LC_ALL=C
A="$OUT/c"; mkdir -p "$A"
RG=$PWD/.gpu/racegate
( sleep 300; pkill -f racegate; pkill -f compute-sanitizer ) >/dev/null 2>&1 &
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
corpus() { # name, stress runs at once
  cd examples/corpus && rm -f racegate-baseline.json
  env RACEGATE_STRESS_AT_ONCE=$2 RACEGATE_TIMELINE="$A/timeline-$1.tsv" "$RG" gate --tools $TOOLS --trials 100 \
    --sanitize-timeout 20 --timeout 5 --sarif "$A/$1.sarif" --junit "$A/$1-junit.xml" --summary "$A/$1-summary.md"
  echo "gate exit $?"
  cd ../.. && python3 ci/check-corpus "$A/$1.sarif"
}
(cd examples/corpus && timeout 120 "$RG" compile > "$A/corpus-compile.txt" 2>&1)
step corpus4 timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus4 4"
step corpus12 timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus12 12"

kill $V $G 2>/dev/null
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
date -u >> "$A/env.txt"
tar czf "$OUT/c.tgz" -C "$OUT" c && rm -rf "$A"
ls -la "$OUT"
