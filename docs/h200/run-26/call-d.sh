#!/usr/bin/env bash
# Run 26, call D: after call C, (1) a batch's XML file is named by its label's start and a hash
# (call B: four matrix batches had labels past 255 bytes, so no XML, every case alone): the
# matrix with its timeline; (2) pct delays at least 2 us (was 1): bench and the detection table
# again. The watchdog writes nothing to the call's output.
set -u
D="$OUT/d"; mkdir -p "$D"
( sleep 330; pkill -f h200_run.py; pkill -f racegate ) >/dev/null 2>&1 &
W=$!
timeout 320 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$D" \
  --phases env,check,bench,detection --trials 100 --jobs 14 > "$D/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$D/h200_run.log"
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$D/h200_run.log"; date -u >> "$D/h200_run.log"
tar czf "$OUT/d.tgz" -C "$OUT" d && rm -rf "$D"
ls -la "$OUT"
