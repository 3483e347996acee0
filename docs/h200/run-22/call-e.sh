#!/usr/bin/env bash
# Run 22, call E: after the run's fixes, the checks that fit the device time left, five lanes at once
# with a hard deadline before the pack: racegate perf with ncu (the course tables and the CSV
# fixtures); stress's minimal repros; Korean grading; the two masked sample programs; streamcheck.
set -u
RG="$PWD/.gpu/racegate"
E="$OUT/e"; mkdir -p "$E"
P=()
( timeout 120 "$RG" perf transpose_naive_tile transpose_padded transpose_swizzled reduce_interleaved reduce_sequential \
    reduce_warp_unrolled reduce_shuffle matmul_naive matmul_tiled16 matmul_tiled32 --table "$E/perf-tables.md" \
    --json "$E/perf.json" --save-csv "$E/perf-csv" > "$E/perf.txt" 2>&1; echo "[rc=$?]" >> "$E/perf.txt"
  timeout 25 "$RG" perf --check > "$E/perf-check.txt" 2>&1; echo "[rc=$?]" >> "$E/perf-check.txt" ) &
P+=($!)
( for c in matmul_tiled16::no_sync_after_compute reduce_sequential::no_loop_sync transpose_padded::no_sync; do
    echo "\$ racegate stress $c --trials 40 --seed 1 --shrink-budget 25"
    timeout 48 "$RG" stress "$c" --trials 40 --seed 1 --shrink-budget 25 --json "$E/shrink-${c//:/_}.json"; echo "[rc=$?]"
  done > "$E/shrink.txt" 2>&1 ) &
P+=($!)
( S=harness/tests/submissions/reduce
  for f in missing_loop_barrier no_bounds_check; do
    echo "\$ racegate grade --exercise reduce --lang ko --sanitize-timeout 20 $S/$f.cu"
    timeout 70 "$RG" grade --exercise reduce --lang ko --sanitize-timeout 20 "$S/$f.cu"; echo "[rc=$?]"
  done > "$E/grade-ko.txt" 2>&1 ) &
P+=($!)
( cd .gpu/samples && for s in asyncAPI BlackScholes; do
    (cd $s && nvcc -O2 -lineinfo -std=c++17 -arch=sm_90 -I ../Common --extended-lambda -rdc=true $(ls *.cu *.cpp 2>/dev/null | grep -v _kernel.cuh) -o /tmp/$s > /dev/null 2>&1)
  done
  for s in asyncAPI BlackScholes; do
    echo "\$ racegate gate --tools globalcheck --runs 3 -- /tmp/$s"
    (cd /tmp && timeout 60 "$RG" gate --baseline /tmp/nb-$s.json --tools globalcheck --runs 3 --json "$E/gate-$s.json" -- /tmp/$s); echo "[rc=$?]"
  done > "$E/masks.txt" 2>&1 ) &
P+=($!)
( timeout 120 python3 ci/streams-check --racegate "$RG" --out "$E/streams" > "$E/streams.log" 2>&1; echo "exit $?" >> "$E/streams.log" ) &
P+=($!)
( sleep 150; pkill -f streams-check; pkill -f racegate ) &
W=$!
wait "${P[@]}"; kill $W 2>/dev/null
find "$E" -name '*.cubin' -delete
tar czf "$OUT/e.tgz" -C "$OUT" e && rm -rf "$E"
ls -la "$OUT"
