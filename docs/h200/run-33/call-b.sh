#!/usr/bin/env bash
# Run 33, call B (2026-12-05): issue #46's corpus record, continued. Call A's four slowest gates
# held all four slots for its whole 516 s (one finished): every gate's measuring run waited for
# the GPU held alone behind the others' long tool runs, and while it waited no gate could start a
# run. This binary (9402f2e) measures beside other work when the GPU is not free. The corpus
# built, then gated with racegate's defaults, 4 at once, without the three slowest programs
# (cba-mmul-rectangular, hec-kernel-launch, cub-block-scan) and cba-mmul-tiled (passed in call
# A). Hard deadline (570 s, DEADLINE=S for less); the pack is made whatever happens.
set -u
. docs/h200/run-33/lib.sh
begin b
REST=${ALL#cba-mmul-rectangular,hec-kernel-launch,cub-block-scan,cba-mmul-tiled,}
step corpus-build timeout 90 python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --build-only --build-jobs 14
step corpus-4 timeout "$(left)" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --parallel 4 --no-plain --only "${ONLY:-$REST}"
pack b
