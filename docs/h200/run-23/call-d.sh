#!/usr/bin/env bash
# Run 23, call D (commit in RECORD.md): the five NVIDIA samples call C's gate reported though
# they are correct (timings without a unit, a hang only under load and jitter, racecheck's
# deadlock claim), gated again with the defaults but --sanitize-timeout 30 to fit the device
# time left, all five at once.
set -u
RG="$PWD/.gpu/racegate"
D="$OUT/d"; mkdir -p "$D"
( timeout 165 python3 ci/gate-samples run --racegate "$RG" --samples .gpu/samples --out "$D/samples" --parallel 5 --gate-jobs 3 \
    --sanitize-timeout 30 --gate-deadline 135 --only simpleStreams,fastWalshTransform,cudaGraphsPerfScaling,reduction,matrixMul \
    > "$D/samples.log" 2>&1; echo "exit $?" >> "$D/samples.log" ) &
L=$!
( sleep 170; pkill -f gate-samples; pkill -f racegate ) &
W=$!
wait $L; kill $W 2>/dev/null
find "$D" -name '*.cubin' -delete; rm -rf .gpu/samples/bin
tar czf "$OUT/d.tgz" -C "$OUT" d && rm -rf "$D"
ls -la "$OUT"
