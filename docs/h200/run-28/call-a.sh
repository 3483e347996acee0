#!/usr/bin/env bash
# Run 28, call A: issue 26's wall times on this build, with timelines, vmstat and nvidia-smi:
#  1. the matrix (`check`) at --jobs 14 as in runs 25-27, and at the default (the cores);
#  2. the corpus gate as `ci/h200_run.py --phases corpus` runs it, with the default number of
#     stress runs at once (the jobs) and with RACEGATE_STRESS_AT_ONCE=8;
#  3. the 30-submission `reduce` grading batch of runs 26-27 (same files, same secret) at the
#     default --jobs 4 and at --jobs 8.
# Changes since run 27 (host-tested): memcheck's host API record after a fault no longer sends
# the cases before a stop alone; racegate's own tools settle per case; the matrix cuts a hung
# case's tool runs to 10 s; jobs waiting on a stress verdict wait instead of starting early.
# Every step has its own timeout; the pack is made whatever happens.
set -u
export LC_ALL=C
A="$OUT/a"; mkdir -p "$A"
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
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; compute-sanitizer --version; nproc; git log --oneline -1 2>/dev/null; } > "$A/env.txt" 2>&1

step check14 timeout 200 env RACEGATE_TIMELINE="$A/timeline-check14.tsv" "$RG" check --jobs 14 --table "$A/matrix14.md" --json "$A/check14.json"
step check16 timeout 200 env RACEGATE_TIMELINE="$A/timeline-check16.tsv" "$RG" check --table "$A/matrix16.md" --json "$A/check16.json"

TOOLS=racecheck,synccheck,memcheck,initcheck,globalcheck,sharedcheck,fencecheck
corpus() { # name, stress at once ('' = default)
  cd examples/corpus && rm -f racegate-baseline.json
  env ${2:+RACEGATE_STRESS_AT_ONCE=$2} RACEGATE_TIMELINE="$A/timeline-$1.tsv" "$RG" gate --tools $TOOLS --trials 100 \
    --sanitize-timeout 20 --timeout 5 --sarif "$A/$1.sarif" --junit "$A/$1-junit.xml" --summary "$A/$1-summary.md"
  echo "gate exit $?"
  cd ../.. && python3 ci/check-corpus "$A/$1.sarif"
}
(cd examples/corpus && timeout 120 "$RG" compile > "$A/corpus-compile.txt" 2>&1)
step corpus16 timeout 240 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus16 ''"
step corpus8 timeout 240 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus8 8"

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
step grade4 timeout 200 env RACEGATE_TIMELINE="$A/timeline-grade4.tsv" "$RG" grade --exercise reduce "$B" \
  --secret-file "$B/../secret" --format json --output "$A/grade4.json"
step grade8 timeout 200 env RACEGATE_TIMELINE="$A/timeline-grade8.tsv" "$RG" grade --jobs 8 --exercise reduce "$B" \
  --secret-file "$B/../secret" --format json --output "$A/grade8.json"

kill $V $G 2>/dev/null
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
date -u >> "$A/env.txt"
tar czf "$OUT/a.tgz" -C "$OUT" a && rm -rf "$A"
ls -la "$OUT"
