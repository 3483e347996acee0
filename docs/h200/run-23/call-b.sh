#!/usr/bin/env bash
# Run 23, call B (the commit named in RECORD.md): after call A's findings (three constant poisons
# for sharedcheck's confirm runs, accesses past the declared shared memory, the corpus's stronger
# inputs): the whole matrix; the full mutation run on the catalog and the corpus; sharedcheck on
# the unwritten-read variants and NVIDIA's shfl_scan; fencecheck on every corpus kernel and on
# examples/; streamcheck's programs; the corpus gate with fencecheck, its HTML and JSON. Every
# lane has a deadline; a watchdog kills what is left before the pack.
set -u
RG="$PWD/.gpu/racegate"
B="$OUT/b"; mkdir -p "$B/sc" "$B/fence"
P=()
( timeout 270 "$RG" check --jobs 5 --table "$B/detection-matrix.md" --json "$B/check.json" > "$B/check.txt" 2>&1; echo "[rc=$?]" >> "$B/check.txt" ) &
P+=($!)
COMMON="--run --trials 20 --jobs 4 --stress-timeout 5 --sanitize-timeout 30 --budget 420"
( timeout 500 "$RG" mutate $COMMON --json "$B/mutate-catalog.json" --table "$B/mutate-catalog.md" > "$B/mutate-catalog.txt" 2>&1; echo "[rc=$?]" >> "$B/mutate-catalog.txt" ) &
P+=($!)
( cd examples/corpus && names=$(python3 -c "
import tomllib
tw=set(tomllib.load(open('expected.toml','rb')))
print(' '.join(k['name'] for k in tomllib.load(open('racegate.toml','rb'))['kernel'] if k['name'] not in tw))")
  timeout 500 "$RG" mutate $COMMON --json "$B/mutate-corpus.json" --table "$B/mutate-corpus.md" $names > "$B/mutate-corpus.txt" 2>&1; echo "[rc=$?]" >> "$B/mutate-corpus.txt" ) &
P+=($!)
( for c in reduce_sequential::uninit_shared_tail stencil3_tiled::halo_unwritten histogram_global::uninit_bins handoff handoff::plain_flag reduce_sequential stencil3_tiled; do
    echo "\$ racegate sanitize --tool sharedcheck $c"
    timeout 90 "$RG" sanitize --tool sharedcheck "$c" --save-xml "$B/sc/${c//:/_}__sharedcheck.jsonl" --save-log "$B/sc/${c//:/_}.log"; echo "[rc=$?]"
  done > "$B/sc-catalog.txt" 2>&1
  ( cd examples/corpus && for c in block_scan_shfl blur7_tiled blur7_tiled_uninit; do
    echo "\$ racegate sanitize --tool sharedcheck $c"
    timeout 90 "$RG" sanitize --tool sharedcheck "$c" --save-xml "$B/sc/corpus-${c}__sharedcheck.jsonl" --save-log "$B/sc/corpus-${c}.log"; echo "[rc=$?]"
  done > "$B/sc-corpus.txt" 2>&1 )
  ( cd .gpu/samples/shfl_scan && nvcc -O2 -lineinfo -std=c++17 -arch=sm_90 -I ../Common $(ls *.cu *.cpp 2>/dev/null) -o /tmp/shfl_scan > "$B/shfl_scan-build.txt" 2>&1 )
  cd /tmp && { echo "\$ racegate sanitize --tool sharedcheck -- /tmp/shfl_scan"; timeout 150 "$RG" sanitize --tool sharedcheck --save-xml "$B/sc/shfl_scan__sharedcheck.jsonl" --save-log "$B/sc/shfl_scan.log" -- /tmp/shfl_scan; echo "[rc=$?]"; } > "$B/shfl_scan.txt" 2>&1 ) &
P+=($!)
( cd examples/corpus && names=$(python3 -c "import tomllib;print(' '.join(k['name'] for k in tomllib.load(open('racegate.toml','rb'))['kernel']))")
  printf '%s\n' $names | timeout 300 xargs -P 3 -I{} sh -c 'timeout 90 "$0" sanitize --tool fencecheck {} > "$1/corpus-{}.txt" 2>&1; echo "[rc=$?]" >> "$1/corpus-{}.txt"' "$RG" "$B/fence" ) &
P+=($!)
( { for ex in gate cargo-test; do
      echo "\$ (cd examples/$ex && racegate gate --tools fencecheck)"; (cd examples/$ex && timeout 120 "$RG" gate --baseline /tmp/nb-fence-$ex.json --tools fencecheck --trials 10); echo "[rc=$?]"
    done
    nvcc -arch=sm_90 -lineinfo -o /tmp/global_races examples/globalcheck/global_races.cu && nvcc -arch=sm_90 -lineinfo -o /tmp/counter examples/gate/program/counter.cu
    for k in counter_atomic warps_barrier histogram_atomic own_read last_block_sum handoff_fenced lanes_syncwarp; do
      echo "\$ racegate sanitize --tool fencecheck -- /tmp/global_races $k"; timeout 60 "$RG" sanitize --tool fencecheck -- /tmp/global_races $k; echo "[rc=$?]"
    done
    echo "\$ racegate sanitize --tool fencecheck -- /tmp/counter"; timeout 60 "$RG" sanitize --tool fencecheck -- /tmp/counter; echo "[rc=$?]"
  } > "$B/fence-examples.txt" 2>&1
  timeout 200 python3 ci/streams-check --racegate "$RG" --out "$B/streams" > "$B/streams.log" 2>&1; echo "exit $?" >> "$B/streams.log" ) &
P+=($!)
( sleep 270; cd examples/corpus && timeout 260 "$RG" gate --tools racecheck,synccheck,memcheck,initcheck,globalcheck,sharedcheck,fencecheck --trials 100 --sanitize-timeout 30 --timeout 5 \
    --sarif "$B/corpus.sarif" --json "$B/corpus-gate.json" --html "$B/corpus-html" --junit "$B/corpus-junit.xml" > "$B/corpus.txt" 2>&1; echo "[rc=$?]" >> "$B/corpus.txt" ) &
P+=($!)
( sleep 548; pkill -f racegate; pkill -f streams-check ) &
W=$!
wait "${P[@]}"; kill $W 2>/dev/null
python3 ci/check-corpus "$B/corpus.sarif" > "$B/check-corpus.txt" 2>&1; echo "[rc=$?]" >> "$B/check-corpus.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$B/gpu.txt" 2>&1; date -u >> "$B/gpu.txt"
find "$B" -name '*.cubin' -delete
tar czf "$OUT/b.tgz" -C "$OUT" b && rm -rf "$B"
ls -la "$OUT"
