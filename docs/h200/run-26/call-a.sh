#!/usr/bin/env bash
# Run 26, call A: after run 25, (1) grading shares the GPU between submissions (a shared lock;
# every verdict that depends on time is confirmed alone): the 30-submission batch alone
# (--exclusive-gpu, as before) and side by side with one secret, the grades compared; (2) the
# gate runs a kernel whose stress run hung alone in every tool at once instead of inside a
# batch first; (3) RACEGATE_TIMELINE records when each job and child process ran, for the
# matrix, the corpus gate and both grading batches; (4) bench with a column for the jitter build
# with jitter off (what the build alone costs). The watchdog writes nothing to the call's
# output, so the call ends when the pack does. vmstat and nvidia-smi sample CPU and GPU use
# every second beside it.
set -u
A="$OUT/a"; mkdir -p "$A"
( sleep 570; pkill -f h200_run.py; pkill -f racegate ) >/dev/null 2>&1 &
W=$!
# CPU and GPU busy over the call, one line a second, to tell which one the jobs wait for.
vmstat -t 1 > "$A/vmstat.txt" 2>&1 &
V=$!
nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory --format=csv -lms 1000 > "$A/gpu-util.csv" 2>&1 &
G=$!
timeout 560 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$A" \
  --phases env,check,corpus,grade30,bench --trials 100 --jobs 14 > "$A/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$A/h200_run.log"
kill $V $G 2>/dev/null
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$A/h200_run.log"; date -u >> "$A/h200_run.log"
tar czf "$OUT/a.tgz" -C "$OUT" a && rm -rf "$A"
ls -la "$OUT"
