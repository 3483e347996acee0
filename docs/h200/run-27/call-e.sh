#!/usr/bin/env bash
# Run 27, call E: right after call D, the same build: bench and the detection table (pct now
# sizes its budget from a launch with the jitter prelude off; the count comes from a launch
# of its own). The pack is made whatever happens; the watchdog writes nothing to the output.
set -u
E="$OUT/e"; mkdir -p "$E"
( sleep 330; pkill -f h200_run.py; pkill -f racegate ) >/dev/null 2>&1 &
W=$!
timeout 320 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$E" \
  --phases env,bench,detection --trials 100 --jobs 14 > "$E/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$E/h200_run.log"
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$E/h200_run.log"; date -u >> "$E/h200_run.log"
tar czf "$OUT/e.tgz" -C "$OUT" e && rm -rf "$E"
ls -la "$OUT"
