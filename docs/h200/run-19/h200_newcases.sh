#!/bin/bash
# H200: fixtures for catalog cases added since the last full capture: one `racegate sanitize` run
# per (case, tool) for the five tools (XML, or globalcheck's JSON-lines report with its line
# tables), the matrix on those cases, and stress on each at the family's fixed size.
# Usage, from the repository root: bash docs/h200/run-19/h200_newcases.sh RACEGATE OUT TRIALS CASE...
# (in ci/ when it ran in H200 runs 19 and 20; moved here with its record, issue #33)
RG=$(realpath "$1"); mkdir -p "$2/fixtures"; O=$(realpath "$2"); TRIALS=$3; shift 3
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; compute-sanitizer --version | tail -1; echo "command: $0 $RG $O $TRIALS $*"; } > "$O/env.txt" 2>&1
for c in "$@"; do for t in racecheck synccheck memcheck initcheck globalcheck; do
  stem="${c//::/__}__$t"; ext=xml; [ $t = globalcheck ] && ext=jsonl
  echo "$RG sanitize $c --tool $t --json $O/fixtures/$stem.json --timeout 30 --save-xml $O/fixtures/$stem.$ext --save-log $O/fixtures/$stem.log > $O/fixtures/$stem.txt 2>&1; echo $stem rc=\$? >> $O/fixtures/rcs.txt"
done; done > "$O/jobs.txt"
t0=$EPOCHREALTIME; xargs -P 8 -I{} sh -c '{}' < "$O/jobs.txt"
echo "sanitize: $(wc -l < "$O/jobs.txt") runs, $(echo "$EPOCHREALTIME $t0" | awk '{printf "%.1f", $1-$2}') s" > "$O/summary.txt"
"$RG" check "$@" --jobs 14 --table "$O/detection-matrix.md" --json "$O/check.json" > "$O/check.txt" 2>&1; echo "check: rc=$?" >> "$O/summary.txt"
for c in "$@"; do
  for j in "" "--no-jitter"; do
    "$RG" stress "$c" --trials "$TRIALS" $j > "$O/stress-${c//::/__}$j.txt" 2>&1; echo "stress $c $j: rc=$? $(tail -2 "$O/stress-${c//::/__}$j.txt" | head -1)" >> "$O/summary.txt"
  done
done
cd "$O" && tar czf results.tar.gz fixtures check.txt check.json detection-matrix.md stress-*.txt jobs.txt && rm -rf fixtures check.txt check.json detection-matrix.md stress-*.txt jobs.txt
