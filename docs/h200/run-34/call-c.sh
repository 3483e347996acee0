#!/usr/bin/env bash
# Run 34, call C (2026-12-06): issue #46's corpus, 4 gates at once with defaults, after call A
# showed the "stall" to be one racecheck run (a naive 4096x4096 transpose, no shared memory, past
# 480 s under racecheck). This binary leaves kernels with no shared memory out of racecheck
# (551b164), calls a plain run's miss a hang only when no other run was on the GPU during it
# (16099b0), sets CUB's known initcheck false positives aside (see RECORD.md) and gives
# globalcheck 16 GiB of shadow. Every program, slowest first (run 33's lib.sh ALL). Hard deadline
# (570 s, DEADLINE=S for less); the pack is made whatever happens.
set -u
. docs/h200/run-33/lib.sh
begin c
step corpus-build timeout 90 python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --build-only --build-jobs 14
step corpus-4 timeout "$(left)" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --parallel 4 --no-plain --only "${ONLY:-$ALL}"
{ date -u; ps -eo pid,ppid,etimes,pcpu,stat,args --sort=etimes | grep -E 'racegate|sanitizer|corpus/bin' | cut -c1-300; nvidia-smi; } > "$A/at-end.txt" 2>&1
pack c
