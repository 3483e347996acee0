#!/usr/bin/env bash
# Run 24, call C (planned): the 30 NVIDIA samples gated with the defaults (issue 32), streamcheck's
# cost on 10k launches (issue 29), the shrinker on every variant stress flags (issue 27), and the
# nextest archive from a checkout at another path than the build's (issue 32).
set -u
RG="$PWD/.gpu/racegate"
C="$OUT/c"; mkdir -p "$C"
P=()
( timeout 430 python3 ci/gate-samples run --racegate "$RG" --samples .gpu/samples --out "$C/samples" --parallel 8 --gate-jobs 2 \
    --sanitize-timeout 120 --gate-deadline 400 > "$C/samples.log" 2>&1; echo "exit $?" >> "$C/samples.log" ) &
P+=($!)
( timeout 200 python3 ci/streams-cost --racegate "$RG" --out "$C/streams-cost" > "$C/streams-cost.log" 2>&1; echo "exit $?" >> "$C/streams-cost.log"
  timeout 220 python3 ci/shrink-all --racegate "$RG" --out "$C/shrink" --parallel 2 --budget 25 --deadline 200 > "$C/shrink.txt" 2>&1; echo "exit $?" >> "$C/shrink.txt" ) &
P+=($!)
( mkdir -p /tmp/elsewhere && cp -r . /tmp/elsewhere/racegate && cd /tmp/elsewhere/racegate && pwd > "$C/nextest-paths.txt" && echo "built at: see RECORD" >> "$C/nextest-paths.txt"
  timeout 400 .gpu/cargo-nextest nextest run --archive-file .gpu/racegate-tests.tar.zst --workspace-remap . --profile ci > "$C/nextest.txt" 2>&1; echo "exit $?" >> "$C/nextest.txt" ) &
P+=($!)
( sleep 450; pkill -f gate-samples; pkill -f shrink-all; pkill -f streams-cost; pkill -f cargo-nextest; pkill -f racegate ) &
W=$!
wait "${P[@]}"; kill $W 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv > "$C/gpu.txt" 2>&1; date -u >> "$C/gpu.txt"
find "$C" -name '*.cubin' -delete
tar czf "$OUT/c.tgz" -C "$OUT" c && rm -rf "$C"
ls -la "$OUT"
