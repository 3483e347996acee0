#!/usr/bin/env bash
# Run 25, call B: after call A, initcheck batched too (earlier cases' memory kept to the end of
# the target), a batch that hangs blames the running case, expected hangs first in the matrix,
# manifest stress first in the gate, the bench's input-set column without its builds. The
# matrix cold and warm, the corpus gate, bench, the detection table (the pct hook changed),
# and where two corpus kernels' stress time goes. The watchdog writes nothing to the call's
# output, so the call ends when the pack does.
set -u
B="$OUT/b"; mkdir -p "$B/cold" "$B/warm"
( sleep 575; pkill -f h200_run.py; pkill -f racegate ) >/dev/null 2>&1 &
W=$!
timeout 120 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$B/cold" \
  --phases env,check --trials 100 --jobs 14 > "$B/cold/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$B/cold/h200_run.log"
timeout 300 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$B/warm" \
  --phases check,corpus,bench --trials 100 --jobs 14 > "$B/warm/h200_run.log" 2>&1
echo "h200_run exit $?" >> "$B/warm/h200_run.log"
# Where a corpus kernel's stress time goes (its phases, in the JSON).
( cd examples/corpus && for k in compact_positive deposit_mass_racy; do
    echo "\$ racegate stress $k --trials 100 --no-shrink --json -"
    timeout 40 "$PWD/../../.gpu/racegate" stress "$k" --trials 100 --no-shrink --json -; echo "[rc=$?]"
  done ) > "$B/corpus-stress.txt" 2>&1
timeout 200 python3 ci/h200_run.py --racegate .gpu/racegate --bundle .gpu --out "$B/detection" \
  --phases detection > "$B/detection.log" 2>&1
echo "h200_run exit $?" >> "$B/detection.log"
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$B/warm/h200_run.log"; date -u >> "$B/warm/h200_run.log"
tar czf "$OUT/b.tgz" -C "$OUT" b && rm -rf "$B"
ls -la "$OUT"
