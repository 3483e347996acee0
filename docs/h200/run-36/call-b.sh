#!/usr/bin/env bash
# Run 36, call B (prepared 2026-12-06 after run 35; not run yet): the corpus's slowest programs
# one at a time (`--parallel 1`: each gate has the GPU to itself, as the issue's "alone" asks),
# the 30 s correct program first (cba-mmul-rectangular: its plain runs take about 61 s), then
# the latency-bound timing loops that ran 20-50 times slower beside three other gates in run 35.
# The pack is made whatever happens (DEADLINE=S for less than 570 s).
set -u
. docs/h200/run-33/lib.sh
ALONE=cba-mmul-rectangular,cub-block-scan,cub-block-reduce,hec-kernel-launch,olcf-vector-add-one-thread
begin b
step corpus-build timeout 90 python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --build-only --build-jobs 14 --only "$ALONE"
step corpus-1 timeout "$(left)" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --parallel 1 --no-plain --only "${ONLY:-$ALONE}"
{ date -u; ps -eo pid,ppid,etimes,pcpu,stat,args --sort=etimes | grep -E 'racegate|sanitizer|corpus/bin' | cut -c1-300; nvidia-smi; } > "$A/at-end.txt" 2>&1
pack b
