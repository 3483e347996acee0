#!/usr/bin/env bash
# Run 22, call F: fencecheck on the corpus and on the program example, and the whole matrix with
# its new headers (commit 0c34cf5's binary); a hard deadline before the pack.
set -u
RG="$PWD/.gpu/racegate"
F="$OUT/f"; mkdir -p "$F"
P=()
( timeout 105 "$RG" check --jobs 12 --table "$F/detection-matrix.md" --json "$F/check.json" > "$F/check.txt" 2>&1; echo "[rc=$?]" >> "$F/check.txt" ) &
P+=($!)
( cd examples/corpus && names=$(python3 -c "import tomllib;print(' '.join(k['name'] for k in tomllib.load(open('racegate.toml','rb'))['kernel']))")
  printf '%s\n' $names | xargs -P 4 -I{} sh -c 'timeout 60 "$0" sanitize --tool fencecheck {} > "$1/corpus-{}.txt" 2>&1; echo "[rc=$?]" >> "$1/corpus-{}.txt"' "$RG" "$F" ) &
P+=($!)
( nvcc -arch=sm_90 -lineinfo -o /tmp/global_races examples/globalcheck/global_races.cu > "$F/programs.txt" 2>&1
  for k in last_block_sum handoff_fenced; do
    echo "\$ racegate sanitize --tool fencecheck -- /tmp/global_races $k"; timeout 40 "$RG" sanitize --tool fencecheck -- /tmp/global_races $k; echo "[rc=$?]"
  done >> "$F/programs.txt" 2>&1 ) &
P+=($!)
( sleep 110; pkill -f racegate ) &
W=$!
wait "${P[@]}"; kill $W 2>/dev/null
tar czf "$OUT/f.tgz" -C "$OUT" f && rm -rf "$F"
ls -la "$OUT"
