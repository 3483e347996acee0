#!/usr/bin/env bash
# Run 34, call A (prepared 2026-12-05, not run yet): why 4 gates at once stall (run 33: after the
# first minute, no gate finished for 277-412 s, GPU 96-100 % busy, CPUs idle). The corpus 4 at
# once with ci/gate-corpus's snapshots every 15 s and each gate's output as it comes, the
# programs in flight at run 33's stalls first. Hard deadline (570 s, DEADLINE=S for less); the
# pack is made whatever happens.
set -u
. docs/h200/run-33/lib.sh
begin a
FIRST=cba-vector-add-pinned,cub-device-radix-sort,thrust-sorting-aos-soa,thrust-summed-area-table,olcf-transpose-naive,olcf-matrix-sums,olcf-transpose-smem
step corpus-build timeout 90 python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --build-only --build-jobs 14
step corpus-4 timeout "$(left)" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --parallel 4 --no-plain --only "${ONLY:-$FIRST}"
# What was still running when the step ended (the snapshots stop with gate-corpus).
{ date -u; ps -eo pid,ppid,etimes,pcpu,stat,args --sort=etimes | grep -E 'racegate|sanitizer|corpus/bin' | cut -c1-300; nvidia-smi; } > "$A/at-end.txt" 2>&1
pack a
