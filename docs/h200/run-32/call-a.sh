#!/usr/bin/env bash
# Run 32, call A (prepared 2026-12-05; not run yet: two tries got no machine): issue #46's record.
# Carried: .gpu (racegate.xz and cargo-nextest.xz: stripped release binaries of ci/bundle,
# xz-compressed for the 64 MiB limit; racegate-tests.tar.zst: its nextest archive; corpus:
# ci/gate-corpus stage .gpu/corpus). Under a hard deadline of
# 570 s; the pack is made whatever happens:
#  1. the whole suite from the nextest archive at another checkout path (the README's flow);
#  2. ci/streams-cost (streamcheck at most 2x a plain run: the record says whether it is);
#  3. the third-party corpus built, then gated with racegate's defaults 4 at once, as many as
#     fit (the rest in call B, alone and 4 at once);
#  4. the streams examples (fixed/broken twins) with defaults, and the missing-fence examples.
set -u
. docs/h200/run-30/lib.sh
. docs/h200/run-32/lib.sh
begin a
suite() {
  E=$(mktemp -d)/elsewhere; mkdir -p "$E"
  cp -a . "$E/" && cd "$E" &&
    INSTA_WORKSPACE_ROOT=$PWD target/bundle/cargo-nextest nextest run --no-fail-fast \
      --archive-file target/bundle/racegate-tests.tar.zst --workspace-remap . --profile ci
  echo "suite exit $?"
}
step suite timeout 240 bash -c "$(declare -f suite); suite"
step streams-cost timeout 90 python3 ci/streams-cost --racegate "$RG" --out "$A/streams-cost" --reps 3
step corpus-build timeout 60 python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --build-only --build-jobs 16
twins() { # each pair gated with racegate's defaults; the 8 programs 4 at once
  one() {
    local p=$1 b; b=$(mktemp -d)/$(basename "$p" .cu)
    nvcc -O2 -lineinfo -arch=sm_90 -o "$b" "$p" >/dev/null 2>&1 || { echo "$p: build failed"; return; }
    ( cd "$(dirname "$b")" && "$RG" gate --json "$A/twin-$(basename "$b").json" -- "$b" > "$A/twin-$(basename "$b").txt" 2>&1
      echo "$p: gate exit $?" )
  }
  local n=0
  for p in examples/streams/*.cu; do
    one "$p" & n=$((n + 1))
    [ $((n % 4)) -eq 0 ] && wait
  done
  wait
}
step twins timeout 120 bash -c "$(declare -f twins); A=$A RG=$RG; twins"
step corpus-4 timeout "$(left)" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --parallel 4
pack a
