#!/usr/bin/env bash
# Run 23, call A (commit d0fb501's release binary): the whole matrix; the full mutation run on
# the catalog and the corpus (issue 24); sharedcheck's confirm runs on the unwritten-read
# variants, the corpus's block_scan_shfl and NVIDIA's shfl_scan sample, with raw reports kept
# for fixtures; fencecheck on dot_f64/dot_f64_nofence (issue 30); the corpus gate. Every lane has
# a deadline, and a watchdog kills what is left before the pack.
set -u
RG="$PWD/.gpu/racegate"
A="$OUT/a"; mkdir -p "$A/sc" "$A/fence"
P=()
( timeout 240 "$RG" check --jobs 6 --table "$A/detection-matrix.md" --json "$A/check.json" > "$A/check.txt" 2>&1; echo "[rc=$?]" >> "$A/check.txt" ) &
P+=($!)
COMMON="--run --trials 20 --jobs 4 --stress-timeout 5 --sanitize-timeout 30 --budget 430"
( timeout 500 "$RG" mutate $COMMON --json "$A/mutate-catalog.json" --table "$A/mutate-catalog.md" > "$A/mutate-catalog.txt" 2>&1; echo "[rc=$?]" >> "$A/mutate-catalog.txt" ) &
P+=($!)
( cd examples/corpus && names=$(python3 -c "
import tomllib
tw=set(tomllib.load(open('expected.toml','rb')))
print(' '.join(k['name'] for k in tomllib.load(open('racegate.toml','rb'))['kernel'] if k['name'] not in tw))")
  timeout 500 "$RG" mutate $COMMON --json "$A/mutate-corpus.json" --table "$A/mutate-corpus.md" $names > "$A/mutate-corpus.txt" 2>&1; echo "[rc=$?]" >> "$A/mutate-corpus.txt" ) &
P+=($!)
( for c in stencil3_tiled::halo_unwritten reduce_sequential::uninit_shared_tail histogram_global::uninit_bins handoff handoff::plain_flag \
           counter_block counter_block::read_before_sync histogram_shared histogram_shared::no_sync_before_flush stencil3_tiled; do
    echo "\$ racegate sanitize --tool sharedcheck $c"
    timeout 90 "$RG" sanitize --tool sharedcheck "$c" --save-xml "$A/sc/${c//:/_}__sharedcheck.jsonl" --save-log "$A/sc/${c//:/_}.log"; echo "[rc=$?]"
  done > "$A/sc-catalog.txt" 2>&1
  cd examples/corpus && for c in block_scan_shfl blur7_tiled blur7_tiled_uninit chunk_histogram chunk_histogram_racy count_in_range count_in_range_racy segment_contains segment_contains_racy; do
    echo "\$ racegate sanitize --tool sharedcheck $c"
    timeout 90 "$RG" sanitize --tool sharedcheck "$c" --save-xml "$A/sc/corpus-${c}__sharedcheck.jsonl" --save-log "$A/sc/corpus-${c}.log"; echo "[rc=$?]"
  done > "$A/sc-corpus.txt" 2>&1 ) &
P+=($!)
( cd .gpu/samples/shfl_scan && nvcc -O2 -lineinfo -std=c++17 -arch=sm_90 -I ../Common $(ls *.cu *.cpp 2>/dev/null) -o /tmp/shfl_scan > "$A/shfl_scan-build.txt" 2>&1
  cd /tmp && { echo "\$ racegate gate --tools sharedcheck --runs 2 -- /tmp/shfl_scan"; timeout 200 "$RG" gate --baseline /tmp/nb-shfl.json --tools sharedcheck --runs 2 --json "$A/gate-shfl_scan.json" -- /tmp/shfl_scan; echo "[rc=$?]"
    echo "\$ racegate sanitize --tool sharedcheck -- /tmp/shfl_scan"; timeout 200 "$RG" sanitize --tool sharedcheck --save-xml "$A/sc/shfl_scan__sharedcheck.jsonl" --save-log "$A/sc/shfl_scan.log" -- /tmp/shfl_scan; echo "[rc=$?]"; } > "$A/shfl_scan.txt" 2>&1 ) &
P+=($!)
( cd examples/corpus && for c in dot_f64_nofence dot_f64; do
    echo "\$ racegate sanitize --tool fencecheck $c"
    timeout 150 "$RG" sanitize --tool fencecheck "$c" --save-xml "$A/fence/$c.jsonl" --save-log "$A/fence/$c.log"; echo "[rc=$?]"
  done > "$A/fencecheck-corpus.txt" 2>&1 ) &
P+=($!)
( sleep 250; cd examples/corpus && timeout 280 "$RG" gate --trials 100 --sanitize-timeout 30 --timeout 5 --sarif "$A/corpus.sarif" \
    --junit "$A/corpus-junit.xml" --summary "$A/corpus-summary.md" > "$A/corpus.txt" 2>&1; echo "[rc=$?]" >> "$A/corpus.txt"
  python3 "$OLDPWD/ci/check-corpus" "$A/corpus.sarif" >> "$A/corpus.txt" 2>&1; echo "[check-corpus rc=$?]" >> "$A/corpus.txt" ) &
P+=($!)
( sleep 545; pkill -f racegate; pkill -f shfl_scan ) &
W=$!
wait "${P[@]}"; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv > "$A/gpu.txt" 2>&1; compute-sanitizer --version >> "$A/gpu.txt" 2>&1; nvcc --version | tail -2 >> "$A/gpu.txt"; date -u >> "$A/gpu.txt"
find "$A" -name '*.cubin' -delete
tar czf "$OUT/a.tgz" -C "$OUT" a && rm -rf "$A"
ls -la "$OUT"
