#!/usr/bin/env bash
# Run 36, call C (2026-12-06, after call B): the suite again from a new archive (call B's three
# failures fixed in 45afb47), then streamcheck's footprint confirm run (fdb1c14) where it must
# act: blog-async-overlap (run 35 and call A: a false "near certain" race, `kernel(d_a, offset)`
# per stream), hec-concurrent-kernels (run 35: inconclusive on "may touch"), and the streams
# twins of examples/streams (the racy ones must stay flagged, the fixed ones clean), 4 gates at
# once with defaults. The pack is made whatever happens (DEADLINE=S).
set -u
. docs/h200/run-30/lib.sh
. docs/h200/run-32/lib.sh
begin c
suite() {
  E=$(mktemp -d)/elsewhere; mkdir -p "$E"
  cp -a . "$E/" && cd "$E" &&
    INSTA_WORKSPACE_ROOT=$PWD target/bundle/cargo-nextest nextest run --no-fail-fast \
      --archive-file target/bundle/racegate-tests.tar.zst --workspace-remap . --profile ci
  echo "suite exit $?"
}
step suite timeout "${SUITE_S:-300}" bash -c "$(declare -f suite); suite"
step corpus-build timeout 60 python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --build-only --build-jobs 14 --only blog-async-overlap,hec-concurrent-kernels
BG=()
step-bg() { local n=$1; shift; step "$n" "$@" & BG+=($!); }
step-bg corpus timeout "$(left)" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --parallel 2 --no-plain --only blog-async-overlap,hec-concurrent-kernels
twins() { # each program gated with racegate's defaults, 2 at once (beside the 2 corpus gates)
  one() {
    local p=$1 b; b=$(mktemp -d)/$(basename "$p" .cu)
    nvcc -O2 -g -lineinfo -arch=sm_90 -o "$b" "$p" >/dev/null 2>&1 || { echo "$p: build failed"; return; }
    ( cd "$(dirname "$b")" && "$RG" gate --json "$A/twin-$(basename "$b").json" -- "$b" > "$A/twin-$(basename "$b").txt" 2>&1
      echo "$p: gate exit $?" )
  }
  local n=0
  for p in examples/streams/*.cu; do
    one "$p" & n=$((n + 1))
    [ $((n % 2)) -eq 0 ] && wait
  done
  wait
}
step-bg twins timeout "$(left)" bash -c "$(declare -f twins); A=$A RG=$RG; twins"
wait "${BG[@]}"
{ date -u; ps -eo pid,ppid,etimes,pcpu,stat,args --sort=etimes | grep -E 'racegate|sanitizer|corpus/bin|nextest' | cut -c1-300; nvidia-smi; } > "$A/at-end.txt" 2>&1
pack c
