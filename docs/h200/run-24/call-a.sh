#!/usr/bin/env bash
# Run 24, call A (planned): the timing figures of issue 26, each phase alone on the machine, one
# after another (ci/h200_run.py): the matrix with its time breakdown, the corpus gate, the graded
# batch of 30, bench. Then the detection table. A watchdog ends what is left before the pack.
set -u
A="$OUT/a"; mkdir -p "$A"
( sleep 520; pkill -f h200_run.py; pkill -f racegate ) &
W=$!
timeout 510 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$A" \
  --phases env,doctor,check,corpus,grade30,bench --trials 100 --jobs 14 > "$A/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$A/h200_run.log"
kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$A/h200_run.log"; date -u >> "$A/h200_run.log"
tar czf "$OUT/a.tgz" -C "$OUT" a && rm -rf "$A"
ls -la "$OUT"
