#!/usr/bin/env bash
# Run 24, call B (planned): issue 24's mutation scores with today's sharedcheck (the catalog and
# the corpus, every mutant run), then sharedcheck's cost beside racecheck's alone on the machine.
set -u
RG="$PWD/.gpu/racegate"
B="$OUT/b"; mkdir -p "$B"
P=()
COMMON="--run --trials 20 --jobs 6 --stress-timeout 5 --sanitize-timeout 30 --budget 330"
( timeout 360 "$RG" mutate $COMMON --json "$B/mutate-catalog.json" --table "$B/mutate-catalog.md" > "$B/mutate-catalog.txt" 2>&1; echo "[rc=$?]" >> "$B/mutate-catalog.txt" ) &
P+=($!)
( cd examples/corpus && names=$(python3 -c "
import tomllib
tw=set(tomllib.load(open('expected.toml','rb')))
print(' '.join(k['name'] for k in tomllib.load(open('racegate.toml','rb'))['kernel'] if k['name'] not in tw))")
  timeout 360 "$RG" mutate $COMMON --json "$B/mutate-corpus.json" --table "$B/mutate-corpus.md" $names > "$B/mutate-corpus.txt" 2>&1; echo "[rc=$?]" >> "$B/mutate-corpus.txt" ) &
P+=($!)
( sleep 370; pkill -f racegate ) &
W=$!
wait "${P[@]}"; kill $W 2>/dev/null
# Alone now: sharedcheck's cost per correct catalog kernel, then one large launch.
echo "case,plain_s,racecheck_s,globalcheck_s,sharedcheck_s,globalcheck+sharedcheck_s" > "$B/sc-timing.csv"; t0=$(date +%s)
for c in matmul_naive matmul_tiled16 matmul_tiled32 transpose_naive_tile transpose_padded transpose_swizzled reduce_interleaved \
         reduce_sequential reduce_warp_unrolled reduce_shuffle histogram_global histogram_shared counter_single counter_block handoff \
         stencil3 stencil3_tiled sum_lastblock; do
  [ $(( $(date +%s) - t0 )) -gt 120 ] && break
  row="$c,nan"
  for t in racecheck globalcheck sharedcheck globalcheck,sharedcheck; do
    s=$(timeout 60 "$RG" sanitize "$c" --tool $t --json - --timeout 50 2>/dev/null | python3 -c "import json,sys;print(f'{json.load(sys.stdin)[\"seconds\"]:.3f}')" 2>/dev/null || echo nan)
    row="$row,$s"
  done
  echo "$row" >> "$B/sc-timing.csv"
done
for t in racecheck sharedcheck; do
  echo "\$ racegate sanitize matmul_tiled32 --size 4096 --tool $t" >> "$B/sc-large.txt"
  timeout 60 "$RG" sanitize matmul_tiled32 --size 4096 --tool $t --json - --timeout 50 >> "$B/sc-large.txt" 2>&1; echo "[rc=$?]" >> "$B/sc-large.txt"
done
python3 ci/sharedcheck-cost "$B/sc-timing.csv" > "$B/sc-cost.md" 2>&1 || true
nvidia-smi --query-gpu=name,driver_version --format=csv > "$B/gpu.txt" 2>&1; date -u >> "$B/gpu.txt"
tar czf "$OUT/b.tgz" -C "$OUT" b && rm -rf "$B"
ls -la "$OUT"
