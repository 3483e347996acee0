#!/usr/bin/env bash
# Run 33, call A (2026-12-05): issue #46's corpus record. The third-party corpus (.gpu/corpus,
# `ci/gate-corpus stage`) built, then every program gated with racegate's defaults, 4 gates at
# once on the one GPU (a shared GPU runner), slowest first. The binary: a tool run that missed
# its deadline beside other GPU work runs again with the GPU held alone (run 32 call C:
# olcf-matrix-mul's six tools killed at their deadlines while the GPU was shared). Plain times
# come from run 32 call A (--no-plain). Hard deadline (570 s, DEADLINE=S for less); the pack is
# made whatever happens.
set -u
. docs/h200/run-33/lib.sh
begin a
step corpus-build timeout 90 python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --build-only --build-jobs 14
step corpus-4 timeout "$(left)" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --parallel 4 --no-plain --only "${ONLY:-$ALL}"
pack a
