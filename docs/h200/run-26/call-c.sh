#!/usr/bin/env bash
# Run 26, call C (right after B, on the same machine): bench (the jitter prelude with only a
# few instructions inline at each barrier, measured beside the bare launch) and the detection
# table regenerated (pct against dense and none, trials to first detection, rates). The
# watchdog writes nothing to the call's output.
set -u
C="$OUT/c"; mkdir -p "$C"
( sleep 560; pkill -f h200_run.py; pkill -f racegate ) >/dev/null 2>&1 &
W=$!
timeout 550 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$C" \
  --phases env,bench,detection --trials 100 --jobs 14 > "$C/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$C/h200_run.log"
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$C/h200_run.log"; date -u >> "$C/h200_run.log"
tar czf "$OUT/c.tgz" -C "$OUT" c && rm -rf "$C"
ls -la "$OUT"
