#!/usr/bin/env bash
# Run 24, call C: after calls A and B. bench again, with one more build of the pct hook that
# counts no barrier (what the count costs); the 30-submission grading batch again (the sanitizer
# items' deadline after a hang is now at most 15 s), the shrinker on every variant stress flags
# again (a repro must fail on its first trial: else the failing run's own line), then
# fencecheck on the corpus's dot_f64 pair. Each lane has a deadline; the watchdog writes nothing to the
# call's output, so the call ends when the pack does.
set -u
C="$OUT/c"; mkdir -p "$C"
( sleep 470; pkill -f h200_run.py; pkill -f shrink-all; pkill -f racegate ) >/dev/null 2>&1 &
W=$!
timeout 250 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$C" --phases env,bench,grade30 > "$C/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$C/h200_run.log"
timeout 110 python3 ci/shrink-all --racegate "$PWD/.gpu/racegate" --out "$C/shrink" --parallel 3 --budget 25 --deadline 95 > "$C/shrink.txt" 2>&1
echo "exit $?" >> "$C/shrink.txt"
# fencecheck on the corpus pair that only it flags (call A's corpus gate ran without it).
( cd examples/corpus && for c in dot_f64 dot_f64_nofence; do
    echo "\$ racegate sanitize --tool fencecheck $c"
    timeout 60 "$PWD/../../.gpu/racegate" sanitize --tool fencecheck "$c"; echo "[rc=$?]"
  done ) > "$C/fencecheck-corpus.txt" 2>&1
# Issue 26: is a worker's device open slow alone, or only when 14 start at once (call A's matrix:
# 1.4 s a stress run)? One stress trial, three times alone, then 14 at once; each prints its phases.
( for i in 1 2 3; do timeout 30 .gpu/racegate stress counter_single --trials 1 --no-shrink --json - ; echo; done
  echo "--- 14 at once"
  for i in $(seq 14); do timeout 60 .gpu/racegate stress counter_single --trials 1 --no-shrink --json - > "$C/open-$i.json" 2>&1 & done; wait
  cat "$C"/open-*.json; rm -f "$C"/open-*.json ) > "$C/device-open.txt" 2>&1
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$C/h200_run.log"; date -u >> "$C/h200_run.log"
tar czf "$OUT/c.tgz" -C "$OUT" c && rm -rf "$C"
ls -la "$OUT"
