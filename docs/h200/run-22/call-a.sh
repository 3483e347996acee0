#!/usr/bin/env bash
# Run 22, call A: the timing-sensitive phases alone on the machine, one after another.
set -u
O="$OUT/a"; mkdir -p "$O"
timeout 570 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$O" \
  --phases env,doctor,compile,check,corpus,bench --trials 100 --jobs 14 > "$O/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$O/h200_run.log"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$O/h200_run.log"
tar czf "$OUT/a.tgz" -C "$OUT" a && rm -rf "$O"
tail -40 "$OUT/../a.log" 2>/dev/null; tar xzf "$OUT/a.tgz" -O a/summary.txt
