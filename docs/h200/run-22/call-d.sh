#!/usr/bin/env bash
# Run 22, call D: the nine third-party programs call B's gate flagged, gated again with every
# detail kept; the mutation phase again (call B's details were lost). Hard deadline before the pack.
set -u
RG="$PWD/.gpu/racegate"
D="$OUT/d"; mkdir -p "$D"
( timeout 320 python3 ci/gate-samples run --racegate "$RG" --samples .gpu/samples --out "$D/samples" --parallel 5 --gate-jobs 2 \
    --sanitize-timeout 60 --gate-deadline 300 --only asyncAPI,clock,reduction,scan,shfl_scan,sortingNetworks,threadFenceReduction,jacobiCudaGraphs,BlackScholes \
    > "$D/samples.log" 2>&1; echo "exit $?" >> "$D/samples.log" ) &
L1=$!
( timeout 320 python3 ci/h200_run.py --racegate "$RG" --bundle .gpu --out "$D/mutate" --phases mutate --jobs 4 > "$D/mutate.log" 2>&1; echo "exit $?" >> "$D/mutate.log" ) &
L2=$!
( sleep 330; pkill -f gate-samples; pkill -f h200_run.py; pkill -f racegate ) &
W=$!
wait $L1 $L2; kill $W 2>/dev/null
find "$D" -name '*.cubin' -delete
tar czf "$OUT/d.tgz" -C "$OUT" d && rm -rf "$D"
ls -la "$OUT"
