#!/usr/bin/env bash
# Run 27, call F: after calls D and E, the matrix and the corpus gate again, with their
# timelines, vmstat and nvidia-smi beside, on this build: (6) in the gate, a kernel whose stress
# run hung gets at most 10 s per tool run (was the whole --sanitize-timeout, 20 s here: five
# such runs of `chained_scan_spin` kept the GPU busy from second 21 to 47 in call D); (7)
# sharedcheck's three confirm runs side by side (one after another they were most of the
# matrix's last jobs). The pack is made whatever happens; the watchdog writes nothing to the
# call's output.
set -u
F="$OUT/f"; mkdir -p "$F"
( sleep 250; pkill -f h200_run.py; pkill -f racegate ) >/dev/null 2>&1 &
W=$!
vmstat -t 1 > "$F/vmstat.txt" 2>&1 &
V=$!
nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory --format=csv -lms 1000 > "$F/gpu-util.csv" 2>&1 &
G=$!
timeout 240 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$F" \
  --phases env,check,corpus --trials 100 --jobs 14 > "$F/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$F/h200_run.log"
kill $V $G 2>/dev/null
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$F/h200_run.log"; date -u >> "$F/h200_run.log"
tar czf "$OUT/f.tgz" -C "$OUT" f && rm -rf "$F"
ls -la "$OUT"
