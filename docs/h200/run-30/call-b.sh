#!/usr/bin/env bash
# Run 30, call B: the build after call A: one hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1)
# for racegate's own one-stream GPU processes (grading workers, the targets of compute-sanitizer
# and of racegate's own tools); racegate's own tools judged per case in a batch (the gate now
# batches every kernel whose stress run neither hung nor faulted); grading keeps the GPU alone
# between a hang's confirm run and the next trial alone. The matrix once; the corpus gate twice
# at the default and once with 8 stress runs at once; the grading batch twice.
# The pack is made whatever happens.
set -u
A="$OUT/b"; mkdir -p "$A"
RG=$PWD/.gpu/racegate
. docs/h200/run-30/lib.sh
( sleep 560; pkill -f racegate; pkill -f compute-sanitizer ) >/dev/null 2>&1 &
W=$!
monitors
env_txt
step check timeout 150 env RACEGATE_TIMELINE="$A/timeline-check.tsv" "$RG" check --table "$A/matrix.md" --json "$A/check.json"
(cd examples/corpus && timeout 120 "$RG" compile > "$A/corpus-compile.txt" 2>&1)
step corpus1 timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus1"
batch30
step grade1 timeout 150 bash -c "$(declare -f grade30); A=$A RG=$RG B=$B; grade30 grade1"
step corpus2 timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus2"
step grade2 timeout 150 bash -c "$(declare -f grade30); A=$A RG=$RG B=$B; grade30 grade2"
step corpus8 timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus8 RACEGATE_STRESS_AT_ONCE=8"

stop_monitors
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
date -u >> "$A/env.txt"
tar czf "$OUT/b.tgz" -C "$OUT" b && rm -rf "$A"
ls -la "$OUT"
