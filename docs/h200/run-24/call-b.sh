#!/usr/bin/env bash
# Run 24, call B: the 30-submission grading batch alone (issue 26's figure; grading now shrinks a
# wrong result by default, issue 27), with its Korean feedback and HTML; then the shrinker on
# every catalog variant stress flags (issue 27), each repro line re-run as pasted.
set -u
RG="$PWD/.gpu/racegate"
B="$OUT/b"; mkdir -p "$B"
( sleep 570; pkill -f h200_run.py; pkill -f shrink-all; pkill -f racegate ) &
W=$!
timeout 300 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$B" --phases env,grade30 > "$B/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$B/h200_run.log"
timeout 255 python3 ci/shrink-all --racegate "$RG" --out "$B/shrink" --parallel 3 --budget 25 --deadline 235 > "$B/shrink.txt" 2>&1
echo "exit $?" >> "$B/shrink.txt"
kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$B/h200_run.log"; date -u >> "$B/h200_run.log"
tar czf "$OUT/b.tgz" -C "$OUT" b && rm -rf "$B"
ls -la "$OUT"
