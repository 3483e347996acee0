#!/usr/bin/env bash
# Run 32, call B (prepared 2026-12-05, not run yet): issue #48's record on the one GPU, shards
# run one after another. (1) The examples/corpus gate whole, then as 3 shards merged with
# `racegate merge`: the same findings (fingerprints), undecided runs and exit code
# (compare-shards.py); (2) the 30-submission batch of run 30 graded whole and as 2 shards (the
# shards' CSV rows, sorted, against the whole's); (3) the 30 s correct program with defaults
# (issue #46). Under a hard deadline of 570 s; the pack is made whatever happens.
set -u
. docs/h200/run-30/lib.sh
. docs/h200/run-32/lib.sh
begin b
corpus_shards() {
  cd examples/corpus && rm -f racegate-baseline.json
  "$RG" gate --json "$A/corpus-whole.json" > "$A/corpus-whole.txt" 2>&1; echo "whole exit $?"
  for k in 1 2 3; do
    "$RG" gate --partition "$k/3" --json "$A/corpus-shard-$k.json" > "$A/corpus-shard-$k.txt" 2>&1
    echo "shard $k exit $?"
  done
  "$RG" merge "$A"/corpus-shard-*.json --json "$A/corpus-merged.json" > "$A/corpus-merged.txt" 2>&1
  echo "merge exit $?"
}
step corpus-shards timeout 300 bash -c "$(declare -f corpus_shards); A=$A RG=$RG; corpus_shards"
grade_shards() {
  batch30
  "$RG" grade --exercise reduce "$B" --secret-file "$B/../secret" --format csv --output "$A/grade-whole.csv"; echo "whole exit $?"
  for k in 1 2; do
    "$RG" grade --exercise reduce --partition "$k/2" "$B" --secret-file "$B/../secret" --format csv --output "$A/grade-shard-$k.csv"
    echo "shard $k exit $?"
  done
}
step grade-shards timeout 150 bash -c "$(declare -f batch30 grade_shards); A=$A RG=$RG; grade_shards"
S=$(mktemp -d)
nvcc -arch=sm_90 -lineinfo -o "$S/slow_correct" docs/h200/run-31/slow_correct.cu > "$A/slow-build.txt" 2>&1
slow() { cd "$S" && "$RG" gate --json "$A/slow.json" -- ./slow_correct; echo "gate exit $?"; }
step slow timeout 110 bash -c "$(declare -f slow); A=$A RG=$RG S=$S; slow"
pack b
