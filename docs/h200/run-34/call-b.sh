#!/usr/bin/env bash
# Run 34, call B (prepared 2026-12-05, not run yet): issue #48's record on the one GPU, shards run
# one after another. (1) examples/corpus gated whole, then as 3 shards merged with `racegate
# merge`: the same findings (fingerprints), undecided runs and exit code; (2) the 30-submission
# batch of run 30 graded whole and as 2 shards (`--format json`, stamped) merged with `racegate
# merge --csv --json`: the same grades (timings aside) and exit code. Compare with
# docs/h200/run-34/compare-shards.py after the call. Hard deadline (570 s, DEADLINE=S); the pack
# is made whatever happens.
set -u
. docs/h200/run-33/lib.sh
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
  "$RG" grade --exercise reduce "$B" --secret-file "$B/../secret" --format json --output "$A/grade-whole.json"; echo "whole exit $?"
  for k in 1 2; do
    "$RG" grade --exercise reduce --partition "$k/2" "$B" --secret-file "$B/../secret" --format json --output "$A/grade-shard-$k.json"
    echo "shard $k exit $?"
  done
  "$RG" merge "$A"/grade-shard-*.json --json "$A/grade-merged.json" --csv "$A/grade-merged.csv"; echo "merge exit $?"
}
step grade-shards timeout "$(left)" bash -c "$(declare -f batch30 grade_shards); A=$A RG=$RG; grade_shards"
pack b
