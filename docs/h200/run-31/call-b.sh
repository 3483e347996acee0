#!/usr/bin/env bash
# Run 31, call B: measured deadlines and the GPU lease. The matrix and the corpus gate once
# (after the detectors' folder moved and fencecheck's coherent-handoff rule); then side by side:
# (1) a correct program of about 30 s (slow_correct.cu) gated with racegate's defaults, and
# (2) 12 cuda-samples programs (ci/gate-samples, staged in .gpu/samples) gated 4 at once with
# the defaults but --sanitize-timeout 60. The pack is made whatever happens.
set -u
A="$OUT/b"; mkdir -p "$A"
RG=$PWD/.gpu/racegate
. docs/h200/run-30/lib.sh
( sleep 560; pkill -f racegate; pkill -f compute-sanitizer ) >/dev/null 2>&1 &
W=$!
monitors
env_txt
step check timeout 150 env RACEGATE_TIMELINE="$A/timeline-check.tsv" "$RG" check --table "$A/matrix.md" --json "$A/check.json"
step corpus timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus"
S=$(mktemp -d)
nvcc -arch=sm_90 -lineinfo -o "$S/slow_correct" docs/h200/run-31/slow_correct.cu > "$A/slow-build.txt" 2>&1
slow() { cd "$S" && /usr/bin/time -f "wall %e s" "$RG" gate --json "$A/slow.json" -- ./slow_correct; echo "gate exit $?"; }
samples() { python3 ci/gate-samples run --racegate "$RG" --samples .gpu/samples --out "$A/samples" --parallel 4 --limit 12 --sanitize-timeout 60 --build-jobs 16; }
step slow timeout 330 bash -c "$(declare -f slow); A=$A RG=$RG S=$S; slow" &
P1=$!
step samples timeout 330 bash -c "$(declare -f samples); A=$A RG=$RG; samples" &
P2=$!
wait $P1 $P2
stop_monitors
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
date -u >> "$A/env.txt"
tar czf "$OUT/b.tgz" -C "$OUT" b && rm -rf "$A"
ls -la "$OUT"
