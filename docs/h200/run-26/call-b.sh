#!/usr/bin/env bash
# Run 26, call B: after call A, (1) grading holds the shared lock per run on the GPU (a grader
# going alone waits for the runs in flight only), a hang taken alone sends the next trials alone
# until one finishes, trial deadline 5 s and 10 s for the sanitizers of a kernel that finished
# no trial: the 30-submission batch alone (--exclusive-gpu) and side by side with one secret,
# compared; (2) the gate picks jobs by rank (a hung kernel's tools first, then stress, ...),
# builds the manifest's modules side by side for its signature check, and says in the
# timeline why a batch left cases unsettled, which then run alone 4 at once; (3) the jitter
# prelude keeps only a few instructions inline at each barrier. Matrix, corpus gate and
# grading with RACEGATE_TIMELINE, vmstat and nvidia-smi beside them. The watchdog writes
# nothing to the call's output, so the call ends when the pack does.
set -u
B="$OUT/b"; mkdir -p "$B"
( sleep 560; pkill -f h200_run.py; pkill -f racegate ) >/dev/null 2>&1 &
W=$!
vmstat -t 1 > "$B/vmstat.txt" 2>&1 &
V=$!
nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory --format=csv -lms 1000 > "$B/gpu-util.csv" 2>&1 &
G=$!
timeout 550 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$B" \
  --phases env,check,corpus,grade30 --trials 100 --jobs 14 > "$B/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$B/h200_run.log"
kill $V $G 2>/dev/null
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$B/h200_run.log"; date -u >> "$B/h200_run.log"
tar czf "$OUT/b.tgz" -C "$OUT" b && rm -rf "$B"
ls -la "$OUT"
