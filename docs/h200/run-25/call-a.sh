#!/usr/bin/env bash
# Run 25, call A: issue 26's figures after the stress worker kept across cases and the batched
# sanitizer runs. The matrix twice (a fresh machine: the first compiles into an empty PTX
# cache, the second finds it warm), then the corpus gate (compiled first, as before) and
# bench, each phase alone on the machine (ci/h200_run.py). The watchdog writes nothing to the
# call's output, so the call ends when the pack does.
set -u
A="$OUT/a"; mkdir -p "$A/cold" "$A/warm"
( sleep 560; pkill -f h200_run.py; pkill -f racegate ) >/dev/null 2>&1 &
W=$!
timeout 200 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$A/cold" \
  --phases env,doctor,check --trials 100 --jobs 14 > "$A/cold/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$A/cold/h200_run.log"
timeout 340 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$A/warm" \
  --phases check,corpus,bench --trials 100 --jobs 14 > "$A/warm/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$A/warm/h200_run.log"
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$A/warm/h200_run.log"; date -u >> "$A/warm/h200_run.log"
tar czf "$OUT/a.tgz" -C "$OUT" a && rm -rf "$A"
ls -la "$OUT"
