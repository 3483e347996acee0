#!/usr/bin/env bash
# Run 25, call C: after call B, every build the runs need made up front on all cores, batches
# of up to 8 cases, racegate's own tools batched in the matrix too (cases they should find
# nothing in), an expected hang's stress cells first. The matrix cold and warm with 14 jobs
# and warm with the default (16, the cores), the corpus gate, bench. The watchdog writes
# nothing to the call's output, so the call ends when the pack does.
set -u
C="$OUT/c"; mkdir -p "$C/cold" "$C/warm" "$C/jobs16"
( sleep 540; pkill -f h200_run.py; pkill -f racegate ) >/dev/null 2>&1 &
W=$!
timeout 110 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$C/cold" \
  --phases env,check --trials 100 --jobs 14 > "$C/cold/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$C/cold/h200_run.log"
timeout 300 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$C/warm" \
  --phases check,corpus,bench --trials 100 --jobs 14 > "$C/warm/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$C/warm/h200_run.log"
( t=$(date +%s%N); timeout 100 .gpu/racegate check --table "$C/jobs16/detection-matrix.md" --json "$C/jobs16/check.json"
  echo "[rc=$?] [wall $(( ($(date +%s%N) - t) / 1000000 )) ms]" ) > "$C/jobs16/check.txt" 2>&1
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$C/warm/h200_run.log"; date -u >> "$C/warm/h200_run.log"
tar czf "$OUT/c.tgz" -C "$OUT" c && rm -rf "$C"
ls -la "$OUT"
