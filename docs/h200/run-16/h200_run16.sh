#!/bin/bash
# H200 run 16: the catalog cases added after run 15 (the stencil family: a block reading another
# block's output; the escapes mutation testing found), their sanitizer and globalcheck fixtures,
# the matrix on them; and the corpus's sharper jacobi check under stress and mutation.
# Usage, from the repository root: bash docs/h200/run-16/h200_run16.sh RACEGATE OUT
# (in ci/ when it ran in H200 run 16; moved here with its record, issue #33)
RG=$(realpath "$1"); O=$2; mkdir -p "$O/fixtures"; O=$(realpath "$O")
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; compute-sanitizer --version | tail -1; echo "command: $0 $*"; } > "$O/env.txt" 2>&1
CASES="stencil3 stencil3::inplace_neighbour reduce_shuffle::half_mask handoff::plain_flag"
for c in $CASES; do for t in racecheck synccheck memcheck initcheck globalcheck; do
  stem="${c//::/__}__$t"; ext=xml; [ $t = globalcheck ] && ext=jsonl
  echo "$RG sanitize $c --tool $t --json - --timeout 30 --save-xml $O/fixtures/$stem.$ext --save-log $O/fixtures/$stem.log > $O/fixtures/$stem.json 2>&1"
done; done > "$O/jobs.txt"
t0=$EPOCHREALTIME; xargs -P 8 -I{} sh -c '{}' < "$O/jobs.txt"; echo "sanitize: 20 runs, $(echo "$EPOCHREALTIME $t0" | awk '{printf "%.1f", $1-$2}') s" > "$O/summary.txt"
"$RG" check $CASES --jobs 14 --table "$O/detection-matrix.md" --json "$O/check.json" > "$O/check.txt" 2>&1; echo "check: rc=$?" >> "$O/summary.txt"
cd examples/corpus
"$RG" stress jacobi_interior --trials 100 > "$O/jacobi-stress.txt" 2>&1; echo "jacobi stress: rc=$?" >> "$O/summary.txt"
"$RG" mutate --run jacobi_interior --trials 20 --jobs 14 --stress-timeout 5 --sanitize-timeout 30 --json "$O/mutate-jacobi.json" > "$O/mutate-jacobi.txt" 2>&1; echo "jacobi mutate: rc=$?" >> "$O/summary.txt"
cd "$O" && tar czf results.tar.gz fixtures check.txt check.json detection-matrix.md jacobi-stress.txt mutate-jacobi.txt mutate-jacobi.json env.txt jobs.txt && rm -rf fixtures check.txt check.json detection-matrix.md jacobi-stress.txt mutate-jacobi.txt mutate-jacobi.json jobs.txt
