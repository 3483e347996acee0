#!/usr/bin/env bash
# Run 33, call C (2026-12-05): issue #46's corpus, 4 gates at once, with 5e9022f: at most 8 runs
# share the GPU machine-wide (call B: 4 gates x 7 tool runs; nothing finished for its last 412 s),
# a tool run is run again alone only for a deadline of at most 300 s, a number varying between
# plain runs is noise (call B: cub-device-radix-sort's free memory was inconclusive), and
# globalcheck's shadow budget is 8 GiB (call B: cba-vector-add-pinned's 256 MiB vectors). Those
# two first, then the programs not gated yet, fastest first (run 32 call A's plain times), the
# one-thread 32M-element loop last. Hard deadline (DEADLINE=S); the pack is made whatever happens.
set -u
. docs/h200/run-33/lib.sh
begin c
FIRST=cba-vector-add-pinned,cub-device-radix-sort
DONE=",cba-mmul-rectangular,hec-kernel-launch,cub-block-scan,cba-mmul-tiled,cba-vector-add-pinned,cub-device-radix-sort,olcf-transpose-smem-padded,olcf-vector-add-one-thread,"
REST=$(echo "$ALL" | tr , '\n' | tac | while read -r p; do case "$DONE" in *",$p,"*) ;; *) printf '%s,' "$p";; esac; done)
ORDER="$FIRST,${REST}olcf-vector-add-one-thread"
echo "$ORDER" > "$A/order.txt"
step corpus-build timeout 90 python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --build-only --build-jobs 14
step corpus-4 timeout "$(left)" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --parallel 4 --no-plain --only "${ONLY:-$ORDER}"
pack c
