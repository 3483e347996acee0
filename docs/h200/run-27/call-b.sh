#!/usr/bin/env bash
# Run 27, call B: call A (same probe, all phases in one go) ran past the call's limit and
# brought nothing back but its first files: after its alone phase the GPU stayed idle for
# ~500 s while 12 own-tool runs (`racegate sanitize --tool globalcheck,sharedcheck,fencecheck`,
# each its own process) were running. Here the same runs at 1, 2, 4 and 8 at once, and memcheck
# at 4 and 8 at once, each command under `timeout 45`, each step under `timeout 60`, with a
# snapshot every 2 s of every racegate / compute-sanitizer thread's state and kernel wait
# channel and of the GPU's processes; the tool's report with RACEGATE_GC_TRACE=1 (wall clock
# before each line). The pack is made whatever happens.
set -u
B="$OUT/b"; mkdir -p "$B"
RG="$PWD/.gpu/racegate"
body() {
  cd examples/corpus
  { date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; compute-sanitizer --version | tail -1; } > "$B/env.txt" 2>&1
  timeout 60 $RG compile > "$B/compile.txt" 2>&1
  timeout 60 $RG sanitize --tool globalcheck saxpy > "$B/build-tool.txt" 2>&1
  CLEAN=(saxpy hfma_f16 row_normalize reduce_tmpl colsum_bf16 chunk_histogram count_in_range blur7_tiled)
  one() {
    local label=$1; shift
    local s e rc
    s=$(date +%s.%N)
    RACEGATE_TIMELINE="$B/tl-$label.tsv" timeout 45 "$@" > "$B/out-$label.txt" 2>&1
    rc=$?
    e=$(date +%s.%N)
    echo "$label $s $e $rc" >> "$B/times.txt"
  }
  own() { one "$1-own-$2" env RACEGATE_GC_TRACE=1 $RG sanitize --tool globalcheck,sharedcheck,fencecheck --timeout 30 --save-xml "$B/report-$1-$2.jsonl" "$2"; }
  mem() { one "$1-mem-$2" $RG sanitize --tool memcheck --timeout 30 "$2"; }
  step() {  # name, count, kind
    local name=$1 n=$2 kind=$3
    echo "phase $name $(date +%s.%N)" >> "$B/times.txt"
    for c in "${CLEAN[@]:0:$n}"; do $kind $name $c & done
    wait
  }
  own warm saxpy
  for n in 1 2 4 8; do step own$n $n own; done
  step mem4 4 mem
  step mem8 8 mem
  echo "phase end $(date +%s.%N)" >> "$B/times.txt"
}
snap() {
  while true; do
    {
      echo "== $(date +%s.%N)"
      for p in $(pgrep -f "racegate|compute-sanitizer"); do
        for t in /proc/$p/task/*; do
          printf '%s %s %s %s\n' "$p" "$(cut -d' ' -f3 $t/stat 2>/dev/null)" "$(cat $t/wchan 2>/dev/null)" "$(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null | cut -c1-120)"
        done
      done | sort | uniq -c
      nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>&1
    } >> "$B/snap.txt"
    sleep 2
  done
}
snap & S=$!
nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv -lms 500 > "$B/gpu-util.csv" 2>&1 &
G=$!
export -f body
export B RG
timeout 240 bash -c body > "$B/body.log" 2>&1
echo "body exit $?" >> "$B/body.log"
kill $S $G 2>/dev/null
pkill -f "racegate|compute-sanitizer" 2>/dev/null
cd "$OUT" && tar czf b.tgz b && rm -rf b
ls -la "$OUT"
