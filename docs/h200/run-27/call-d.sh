#!/usr/bin/env bash
# Run 27, call D: after calls B and C (own-tool and memcheck runs alone and several at once;
# a faulting kernel does not stall the others), the matrix and the corpus gate with their
# timelines, vmstat and nvidia-smi beside, on this build: (1) a shrink keeps one stress worker
# for its whole search (was a worker per candidate: 1-6 s each in the gate); (2) a pool thread
# closes its stress worker once no stress run is left to start; (3) the gate runs racegate's
# own tools on the kernels whose stress run passed in one injected run per batch; (4) a
# sanitizer batch stopped by an error settles the cases before the stop and batches the rest
# again; (5) pct sizes its budget from a launch with the prelude off. The pack is made
# whatever happens; the watchdog writes nothing to the call's output.
set -u
D="$OUT/d"; mkdir -p "$D"
( sleep 290; pkill -f h200_run.py; pkill -f racegate ) >/dev/null 2>&1 &
W=$!
vmstat -t 1 > "$D/vmstat.txt" 2>&1 &
V=$!
nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory --format=csv -lms 1000 > "$D/gpu-util.csv" 2>&1 &
G=$!
timeout 280 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$D" \
  --phases env,check,corpus --trials 100 --jobs 14 > "$D/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$D/h200_run.log"
kill $V $G 2>/dev/null
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$D/h200_run.log"; date -u >> "$D/h200_run.log"
tar czf "$OUT/d.tgz" -C "$OUT" d && rm -rf "$D"
ls -la "$OUT"
