#!/usr/bin/env bash
# Run 31, call C: grading after call A's fixes. The reduce sample folder (with the
# poison-probing cheat added after call A) graded and checked against expected.toml; two
# failing submissions with Korean feedback (each explanation once); and the shipped course
# graded by a copy of the binary outside any checkout, with no --root.
set -u
A="$OUT/c"; mkdir -p "$A"
RG=$PWD/.gpu/racegate
. docs/h200/run-30/lib.sh
( sleep 400; pkill -f racegate; pkill -f compute-sanitizer ) >/dev/null 2>&1 &
W=$!
env_txt
reduce() {
  "$RG" --root . grade --exercise reduce harness/tests/submissions/reduce --sanitize-timeout 20 --format json --jobs 4 --output "$A/grade-reduce.json"
  echo "exit $?"
  for f in cheat_poison_probe missing_loop_barrier; do
    "$RG" --root . grade --exercise reduce --lang ko --sanitize-timeout 20 "harness/tests/submissions/reduce/$f.cu"
    echo "exit $?"
  done
}
step reduce timeout 200 bash -c "$(declare -f reduce); A=$A RG=$RG; reduce"
step check_grades python3 ci/check-grades "$A"
installed() {
  local I; I=$(mktemp -d); cp "$RG" "$I/racegate"; cp harness/tests/submissions/reduce/correct.cu "$I/"
  cd "$I" && ./racegate grade --exercise reduce correct.cu; echo "exit $?"
}
step installed timeout 120 bash -c "$(declare -f installed); RG=$RG; installed"
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
date -u >> "$A/env.txt"
tar czf "$OUT/c.tgz" -C "$OUT" c && rm -rf "$A"
ls -la "$OUT"
