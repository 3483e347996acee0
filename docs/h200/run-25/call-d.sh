#!/usr/bin/env bash
# Run 25, call D: the corpus gate again after call C, whose batch blamed the case running at a
# batch's deadline (`chained_scan`, which finishes alone in 2-3 s) and so gave a third
# inconclusive. Now that case runs alone. The watchdog writes nothing to the call's output.
set -u
D="$OUT/d"; mkdir -p "$D"
( sleep 175; pkill -f h200_run.py; pkill -f racegate ) >/dev/null 2>&1 &
W=$!
timeout 170 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$D" \
  --phases corpus --trials 100 > "$D/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$D/h200_run.log"
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$D/h200_run.log"; date -u >> "$D/h200_run.log"
tar czf "$OUT/d.tgz" -C "$OUT" d && rm -rf "$D"
ls -la "$OUT"
