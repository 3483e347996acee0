#!/usr/bin/env bash
# Run 30, call D: does one hardware queue change what racecheck does with `chained_scan_spin`
# (call C: once it finished under racecheck instead of hanging)? 24 racecheck runs of it, 12 at
# once in two rounds, half with racegate's one queue and half with CUDA_DEVICE_MAX_CONNECTIONS=8
# (the driver's default; a value the user sets wins), each cut at 15 s like the gate's; each
# run's log kept. Then the corpus gate and the grading batch once more with call C's binary.
# The pack is made whatever happens.
set -u
A="$OUT/d"; mkdir -p "$A"
RG=$PWD/.gpu/racegate
. docs/h200/run-30/lib.sh
( sleep 400; pkill -f racegate; pkill -f compute-sanitizer ) >/dev/null 2>&1 &
W=$!
monitors
env_txt
(cd examples/corpus && timeout 120 "$RG" compile > "$A/corpus-compile.txt" 2>&1)
spin() { # round
  local pids=() i
  for i in 1 2 3 4 5 6; do
    (cd examples/corpus && "$RG" sanitize chained_scan_spin --tool racecheck --timeout 15 \
      --save-log "$A/spin-r$1-q1-$i.log" > "$A/spin-r$1-q1-$i.txt" 2>&1) &
    pids+=($!)
    (cd examples/corpus && CUDA_DEVICE_MAX_CONNECTIONS=8 "$RG" sanitize chained_scan_spin --tool racecheck \
      --timeout 15 --save-log "$A/spin-r$1-q8-$i.log" > "$A/spin-r$1-q8-$i.txt" 2>&1) &
    pids+=($!)
  done
  wait "${pids[@]}"
}
step spin1 spin 1
step spin2 spin 2
{ for f in "$A"/spin-r*-q*-*.txt; do
    l=${f%.txt}.log
    echo "$(basename "$f" .txt) deadlock_lines_log=$(grep -c 'Deadlock detected' "$l" 2>/dev/null) deadlock_lines_out=$(grep -c 'Deadlock detected' "$f") hang=$(grep -ci 'hang\|killed' "$f")"
  done; } > "$A/spin-summary.txt" 2>&1
step corpus timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus"
batch30
step grade timeout 150 bash -c "$(declare -f grade30); A=$A RG=$RG B=$B; grade30 grade"

stop_monitors
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
date -u >> "$A/env.txt"
tar czf "$OUT/d.tgz" -C "$OUT" d && rm -rf "$A"
ls -la "$OUT"
