#!/usr/bin/env bash
# Run 36, call B (2026-12-06, after call A): issue #46's suite on a GPU runner and what call A
# left to see. Carried: .gpu (racegate.xz, cargo-nextest.xz and racegate-tests.tar.zst from
# ci/bundle; the corpus from ci/gate-corpus stage). The pack is made whatever happens.
#  1. the whole suite from the nextest archive at another checkout path (the README's flow);
#  2. then, together: the ~30 s correct program (docs/h200/run-31/slow_correct.cu) gated with
#     defaults; blog-transpose gated with defaults (call A: an output finding the still clock
#     did not settle, its rates printed with %20.2f; fixed in f4c30d4); initcheck's raw report
#     on thrust-custom-temp-alloc, with host backtraces (call A: "Host API uninitialized memory
#     access" kept by the run of every launch: which API call, which bytes).
set -u
. docs/h200/run-30/lib.sh
. docs/h200/run-32/lib.sh
begin b
suite() {
  E=$(mktemp -d)/elsewhere; mkdir -p "$E"
  cp -a . "$E/" && cd "$E" &&
    INSTA_WORKSPACE_ROOT=$PWD target/bundle/cargo-nextest nextest run --no-fail-fast \
      --archive-file target/bundle/racegate-tests.tar.zst --workspace-remap . --profile ci
  echo "suite exit $?"
}
step suite timeout "${SUITE_S:-380}" bash -c "$(declare -f suite); suite"
slow() {
  S=$(mktemp -d)
  nvcc -arch=sm_90 -lineinfo -o "$S/slow_correct" docs/h200/run-31/slow_correct.cu || return 1
  cd "$S" && "$RG" gate --json "$A/slow.json" -- ./slow_correct; echo "gate exit $?"
}
thrust_initcheck() {
  local b=.gpu/corpus/bin/thrust-custom-temp-alloc
  compute-sanitizer --tool initcheck --show-backtrace yes --print-limit 50 "$b" 2>&1 | tail -120
  echo "compute-sanitizer exit $?"
  "$RG" sanitize --tool initcheck --save-xml "$A/thrust-initcheck.xml" -- "$b" 2>&1 | tail -20
  echo "sanitize exit $?"
}
step corpus-build timeout 90 python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --build-only --build-jobs 14 --only blog-transpose,thrust-custom-temp-alloc
# `wait` on these alone: the monitors and the deadline watcher are children too.
BG=()
step-bg() { local n=$1; shift; step "$n" "$@" & BG+=($!); }
step-bg slow timeout "$(left)" bash -c "$(declare -f slow); A=$A RG=$RG; slow"
step-bg transpose timeout "$(left)" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --parallel 1 --no-plain --only blog-transpose
step-bg thrust-initcheck timeout 120 bash -c "$(declare -f thrust_initcheck); A=$A RG=$RG; thrust_initcheck"
wait "${BG[@]}"
{ date -u; ps -eo pid,ppid,etimes,pcpu,stat,args --sort=etimes | grep -E 'racegate|sanitizer|corpus/bin|nextest' | cut -c1-300; nvidia-smi; } > "$A/at-end.txt" 2>&1
pack b
