#!/usr/bin/env bash
# Run 35, call B (2026-12-06): where streamcheck's cost goes, then the corpus's slowest programs.
# 1. ci/streams-cost (3 plain and 3 streamcheck runs side by side) with this call's binary and with
#    call A's (737d3ce: the tool before its driver-call callbacks stopped allocating strings and
#    reading the environment), then two more streamcheck runs
#    of the same program with RACEGATE_TIMELINE (racegate's own spans: the program's run under
#    the injected tool against racegate's start and its reading of the log) and two runs of the
#    program with the cached tool injected directly (CUDA_INJECTION64_PATH, no racegate): the
#    split of the 2.29x of run 32 between the tool and racegate; RACEGATE_GC_PROFILE=1 writes the
#    time of the tool's callbacks per domain into each injected run's report.jsonl.
# 2. The five programs calls A/C of run 34 left running (plain runs of 10-61 s, one-thread and
#    million-launch loops), 4 gates at once with defaults, the fastest first so that the fifth
#    starts when the first ends; includes cba-mmul-rectangular (61 s plain: the issue's "correct
#    program that runs 30 s plainly, judged clean with no flag"). The pack is made whatever happens.
set -u
. docs/h200/run-33/lib.sh
SLOW=olcf-transpose-naive,cub-block-scan,hec-kernel-launch,cba-mmul-rectangular,olcf-vector-add-one-thread
begin b
step streams-cost timeout 150 python3 ci/streams-cost --racegate "$RG" --out "$A/streams-cost"
old_binary() { xz -dc .gpu/racegate-737d3ce.xz > .gpu/racegate-737d3ce && chmod +x .gpu/racegate-737d3ce; }
step old-binary old_binary
step streams-cost-737d3ce timeout 150 env RACEGATE_CACHE="$PWD/.gpu/cache-737d3ce" python3 ci/streams-cost --racegate "$PWD/.gpu/racegate-737d3ce" --out "$A/streams-cost-737d3ce"
tm() { # label, then the command: its wall on a line of its own (no /usr/bin/time needed)
  local l=$1; shift; local s; s=$(now); "$@"; echo "$l-wall $(python3 -c "print(f'{$(now) - $s:.3f}')")"
}
streams_split() {
  local exe=$A/streams-cost/launches_10k
  for i in 1 2; do
    tm racegate env RACEGATE_TIMELINE="$A/timeline-streams-$i.tsv" \
      "$RG" sanitize --tool streamcheck --timeout 120 -- "$exe" 10000 | tail -3
  done
  local so; so=$(find "${RACEGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/racegate}" -name '*.so' 2>/dev/null | head -5)
  echo "cached libraries: $so"
  so=$(echo "$so" | grep -v -m1 -i patch)
  for i in 1 2; do
    tm plain "$exe" 10000 | grep -E "loop_ms|wall"
    mkdir -p "$A/injected-$i"
    [ -n "$so" ] && tm injected env CUDA_INJECTION64_PATH="$so" RACEGATE_GC_PROFILE=1 \
      RACEGATE_GC_MODE=streams RACEGATE_GC_DIR="$A/injected-$i" "$exe" 10000 | grep -E "loop_ms|wall"
    grep -h profile "$A/injected-$i/report.jsonl"; wc -l "$A/injected-$i"/*
  done
}
step streams-split timeout 120 streams_split
step corpus-build timeout 120 python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --build-only --build-jobs 14 --only "$SLOW"
step corpus-slow timeout "$(left)" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --parallel 4 --no-plain --only "${ONLY:-$SLOW}"
{ date -u; ps -eo pid,ppid,etimes,pcpu,stat,args --sort=etimes | grep -E 'racegate|sanitizer|corpus/bin' | cut -c1-300; nvidia-smi; } > "$A/at-end.txt" 2>&1
pack b
