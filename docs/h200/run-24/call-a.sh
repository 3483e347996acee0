#!/usr/bin/env bash
# Run 24, call A: issue 26's figures, each phase alone on the machine, one after another
# (ci/h200_run.py): the matrix with the time breakdown `check` prints, the corpus gate, bench
# (with where a trial's time goes), then the detection table. A watchdog ends what is left
# before the pack.
set -u
A="$OUT/a"; mkdir -p "$A"
( sleep 560; pkill -f h200_run.py; pkill -f racegate ) &
W=$!
timeout 555 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$A" \
  --phases env,doctor,check,corpus,bench,detection --trials 100 --jobs 14 > "$A/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$A/h200_run.log"
kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$A/h200_run.log"; date -u >> "$A/h200_run.log"
tar czf "$OUT/a.tgz" -C "$OUT" a && rm -rf "$A"
ls -la "$OUT"
