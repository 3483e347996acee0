#!/usr/bin/env bash
# Run 30, call C: call B's build with half the jobs as stress runs at once by default (8 on this
# machine; call B measured 8 only through RACEGATE_STRESS_AT_ONCE) and the fixes of a review of
# call B's change. The corpus gate twice at the new default, the grading batch once, the matrix
# once. The pack is made whatever happens.
set -u
A="$OUT/c"; mkdir -p "$A"
RG=$PWD/.gpu/racegate
. docs/h200/run-30/lib.sh
( sleep 400; pkill -f racegate; pkill -f compute-sanitizer ) >/dev/null 2>&1 &
W=$!
monitors
env_txt
(cd examples/corpus && timeout 120 "$RG" compile > "$A/corpus-compile.txt" 2>&1)
step corpus1 timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus1"
batch30
step grade timeout 150 bash -c "$(declare -f grade30); A=$A RG=$RG B=$B; grade30 grade"
step corpus2 timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus2"
step check timeout 150 env RACEGATE_TIMELINE="$A/timeline-check.tsv" "$RG" check --table "$A/matrix.md" --json "$A/check.json"

stop_monitors
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
date -u >> "$A/env.txt"
tar czf "$OUT/c.tgz" -C "$OUT" c && rm -rf "$A"
ls -la "$OUT"
