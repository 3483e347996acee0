#!/usr/bin/env bash
# Run 27, call G: the 30-submission `reduce` grading batch side by side (the default), as in
# run 26 call B (the same 30 files, the same secret), on this build: pct now sizes its budget
# from a launch with the prelude off, which changes which blocks a trial delays; the grades
# are compared with run 26's offline. Only the side-by-side batch (the alone one would not fit
# the session's device time). The pack is made whatever happens.
set -u
export LC_ALL=C
G="$OUT/g"; mkdir -p "$G"
( sleep 170; pkill -f racegate ) >/dev/null 2>&1 &
W=$!
B=$(mktemp -d)/batch30; mkdir -p "$B"
i=0
files=(harness/tests/submissions/reduce/*.cu)
while [ $i -lt 30 ]; do
  f=${files[$((i % ${#files[@]}))]}
  cp "$f" "$B/s$(printf %02d $((i + 1)))_$(basename "$f")"
  i=$((i + 1))
done
echo 20261202 > "$B/../secret"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; ls "$B"; } > "$G/env.txt" 2>&1
s=$(date +%s.%N)
RACEGATE_TIMELINE="$G/timeline-grade30.tsv" timeout 160 .gpu/racegate grade --exercise reduce "$B" \
  --secret-file "$B/../secret" --format json --output "$G/grade30.json" > "$G/grade30.txt" 2>&1
echo "rc $? wall $(echo "$(date +%s.%N) - $s" | bc)" >> "$G/grade30.txt"
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
date -u >> "$G/env.txt"
tar czf "$OUT/g.tgz" -C "$OUT" g && rm -rf "$G"
ls -la "$OUT"
