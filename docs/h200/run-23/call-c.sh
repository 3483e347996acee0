#!/usr/bin/env bash
# Run 23, call C (same binary as call B): 30 NVIDIA sample programs under `racegate gate` with its
# defaults (issue 32); the transposes' perf expectations in `racegate check` (issue 28); a minimal
# repro for every variant stress flags, each re-run as pasted (issue 27); sharedcheck's cost beside
# racecheck's and globalcheck's, side by side in one lane (issue 24). All lanes at once, each
# with a deadline; a watchdog before the pack. Timings are taken while the other lanes run.
set -u
RG="$PWD/.gpu/racegate"
C="$OUT/c"; mkdir -p "$C"
P=()
( timeout 440 python3 ci/gate-samples run --racegate "$RG" --samples .gpu/samples --out "$C/samples" --parallel 10 --gate-jobs 2 \
    --sanitize-timeout 120 --gate-deadline 400 > "$C/samples.log" 2>&1; echo "exit $?" >> "$C/samples.log" ) &
P+=($!)
( timeout 120 "$RG" check transpose_naive_tile transpose_padded transpose_swizzled --jobs 3 --json "$C/check-transpose.json" > "$C/check-transpose.txt" 2>&1; echo "[rc=$?]" >> "$C/check-transpose.txt"
  timeout 300 python3 ci/shrink-all --racegate "$RG" --out "$C/shrink" --parallel 2 --budget 25 --deadline 260 > "$C/shrink.txt" 2>&1; echo "exit $?" >> "$C/shrink.txt" ) &
P+=($!)
( echo "case,plain_s,racecheck_s,globalcheck_s,sharedcheck_s,globalcheck+sharedcheck_s" > "$C/sc-timing.csv"; t0=$(date +%s)
  for c in matmul_naive matmul_tiled16 matmul_tiled32 transpose_naive_tile transpose_padded transpose_swizzled reduce_interleaved \
           reduce_sequential reduce_warp_unrolled reduce_shuffle histogram_global histogram_shared counter_single counter_block handoff \
           stencil3 stencil3_tiled sum_lastblock; do
    [ $(( $(date +%s) - t0 )) -gt 360 ] && break
    row="$c,nan"
    for t in racecheck globalcheck sharedcheck globalcheck,sharedcheck; do
      s=$(timeout 60 "$RG" sanitize "$c" --tool $t --json - --timeout 50 2>/dev/null | python3 -c "import json,sys;print(f'{json.load(sys.stdin)[\"seconds\"]:.3f}')" 2>/dev/null || echo nan)
      row="$row,$s"
    done
    echo "$row" >> "$C/sc-timing.csv"
  done
  python3 ci/sharedcheck-cost "$C/sc-timing.csv" > "$C/sc-cost.md" 2>&1 || true ) &
P+=($!)
( sleep 470; pkill -f gate-samples; pkill -f shrink-all; pkill -f racegate ) &
W=$!
wait "${P[@]}"; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv > "$C/gpu.txt" 2>&1; date -u >> "$C/gpu.txt"
find "$C" -name '*.cubin' -delete; rm -rf .gpu/samples/bin
tar czf "$OUT/c.tgz" -C "$OUT" c && rm -rf "$C"
ls -la "$OUT"
