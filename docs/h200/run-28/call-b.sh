#!/usr/bin/env bash
# Run 28, call B: after call A, the matrix and the corpus gate again on this build:
#  - builds before the matrix and the gate run 2x the jobs at once (call A: the matrix's 176
#    builds took 3.4 s with the cores half idle);
#  - in the gate a kernel's verdict goes out before its minimal-repro search (call A: the tools
#    of a group of kernels waited up to 23 s on one kernel's search);
#  the matrix at the default jobs (16) and at --jobs 24; the corpus gate with at most 8, 6 and
#  16 (the default) stress runs at once. The pack is made whatever happens.
set -u
export LC_ALL=C
A="$OUT/b"; mkdir -p "$A"
RG=$PWD/.gpu/racegate
( sleep 555; pkill -f racegate; pkill -f compute-sanitizer ) >/dev/null 2>&1 &
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

step check16 timeout 200 env RACEGATE_TIMELINE="$A/timeline-check16.tsv" "$RG" check --table "$A/matrix16.md" --json "$A/check16.json"
step check24 timeout 200 env RACEGATE_TIMELINE="$A/timeline-check24.tsv" "$RG" check --jobs 24 --table "$A/matrix24.md" --json "$A/check24.json"

TOOLS=racecheck,synccheck,memcheck,initcheck,globalcheck,sharedcheck,fencecheck
corpus() { # name, stress at once ('' = default)
  cd examples/corpus && rm -f racegate-baseline.json
  env ${2:+RACEGATE_STRESS_AT_ONCE=$2} RACEGATE_TIMELINE="$A/timeline-$1.tsv" "$RG" gate --tools $TOOLS --trials 100 \
    --sanitize-timeout 20 --timeout 5 --sarif "$A/$1.sarif" --junit "$A/$1-junit.xml" --summary "$A/$1-summary.md"
  echo "gate exit $?"
  cd ../.. && python3 ci/check-corpus "$A/$1.sarif"
}
(cd examples/corpus && timeout 120 "$RG" compile > "$A/corpus-compile.txt" 2>&1)
step corpus8 timeout 150 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus8 8"
step corpus6 timeout 150 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus6 6"
step corpus16 timeout 150 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus16 ''"

kill $V $G 2>/dev/null
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
date -u >> "$A/env.txt"
tar czf "$OUT/b.tgz" -C "$OUT" b && rm -rf "$A"
ls -la "$OUT"
