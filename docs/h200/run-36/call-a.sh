#!/usr/bin/env bash
# Run 36, call A (prepared 2026-12-06 after run 35; not run yet). What run 35's changes claim,
# on the GPU, 4 gates at once with defaults, then the check shards of issue #48:
# 1. The corpus programs whose verdicts run 35's changes touch (initcheck's sampled reports
#    confirmed by a run of every launch: the five Thrust/CUB programs; the still clock:
#    blog-transpose; no kernel launched: blog-bandwidth; blog-async-overlap, still expected to be
#    streamcheck's false alarm) and the five run 35 left running.
# 2. The split of streamcheck's cost (run 35's script gave a shell function to `timeout`).
# 3. `racegate check` whole and as 4 shards merged (`racegate merge`), compared cell for cell.
# The pack is made whatever happens (DEADLINE=S for less than 570 s).
set -u
. docs/h200/run-33/lib.sh
TOUCHED=blog-bandwidth,thrust-sort,thrust-histogram,thrust-custom-temp-alloc,blog-transpose,cub-sort-find-runs,blog-async-overlap,cub-block-radix-sort,olcf-transpose-smem-padded,olcf-matrix-mul,olcf-matrix-mul-shared,hec-babelstream,cub-block-reduce
begin a
check_shards() {
  "$RG" check --json "$A/check-whole.json" > "$A/check-whole.txt" 2>&1; echo "whole exit $?"
  for k in 1 2 3 4; do
    "$RG" check --partition "$k/4" --json "$A/check-shard-$k.json" > "$A/check-shard-$k.txt" 2>&1
    echo "shard $k exit $?"
  done
  "$RG" merge "$A"/check-shard-*.json --json "$A/check-merged.json" > "$A/check-merged.txt" 2>&1
  echo "merge exit $?"
}
step check-shards timeout 200 bash -c "$(declare -f check_shards); A=$A RG=$RG; check_shards"
step corpus-build timeout 90 python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --build-only --build-jobs 14 --only "$TOUCHED"
step corpus-4 timeout "$(( $(left) - 40 ))" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --parallel 4 --no-plain --only "${ONLY:-$TOUCHED}"
streams_split() {
  local exe=$A/launches_10k
  nvcc -arch=sm_90 -O2 -g -lineinfo -o "$exe" examples/streams/cost/launches_10k.cu || return 1
  for i in 1 2; do
    local s; s=$(now)
    RACEGATE_TIMELINE="$A/timeline-streams-$i.tsv" "$RG" sanitize --tool streamcheck --timeout 60 -- "$exe" 10000 | tail -2
    echo "racegate-wall $(python3 -c "print(f'{$(now) - $s:.3f}')")"
  done
  local so; so=$(find "${RACEGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/racegate}" -name '*.so' 2>/dev/null | grep -v -i patch | head -1)
  echo "tool: $so"
  for i in 1 2; do
    local s; s=$(now); "$exe" 10000 | grep loop_ms; echo "plain-wall $(python3 -c "print(f'{$(now) - $s:.3f}')")"
    mkdir -p "$A/injected-$i"; s=$(now)
    CUDA_INJECTION64_PATH="$so" RACEGATE_GC_PROFILE=1 RACEGATE_GC_MODE=streams RACEGATE_GC_DIR="$A/injected-$i" "$exe" 10000 | grep loop_ms
    echo "injected-wall $(python3 -c "print(f'{$(now) - $s:.3f}')")"
    grep -h profile "$A/injected-$i/report.jsonl"
  done
}
# Not under `timeout` (a shell function): bounded by the call's watcher.
streams_split > "$A/streams-split.txt" 2>&1
{ date -u; ps -eo pid,ppid,etimes,pcpu,stat,args --sort=etimes | grep -E 'racegate|sanitizer|corpus/bin' | cut -c1-300; nvidia-smi; } > "$A/at-end.txt" 2>&1
pack a
