#!/usr/bin/env bash
# Run 27, call A: a probe of where racegate's own tools' time goes when many processes share the
# GPU. In the corpus gate of run 26 (call B) each own-tool run took 7-20 s while, alone (run 17),
# such a run costs about 0.3 s; from second 56 on the GPU and the CPUs were mostly idle while
# they ran. Here, in examples/corpus: the same runs alone, then 12 at once, 12 memcheck runs at
# once, 12 own-tool runs beside 4 memcheck runs of out-of-bounds kernels, 12 stress runs at
# once; every run timed from outside, with its RACEGATE_TIMELINE and (own tools) the tool's
# report with RACEGATE_GC_TRACE=1 (each line preceded by the wall clock), vmstat and nvidia-smi
# beside. The watchdog writes nothing to the call's output.
set -u
A="$OUT/a"; mkdir -p "$A"
( sleep 500; pkill -f racegate; pkill -f compute-sanitizer ) >/dev/null 2>&1 &
W=$!
RG="$PWD/.gpu/racegate"
cd examples/corpus
vmstat -t 1 > "$A/vmstat.txt" 2>&1 &
V=$!
nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory --format=csv -lms 500 > "$A/gpu-util.csv" 2>&1 &
G=$!
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; compute-sanitizer --version; nvcc --version | tail -2; } > "$A/env.txt" 2>&1
$RG compile > "$A/compile.txt" 2>&1
# The tool is built on first use.
$RG sanitize --tool globalcheck saxpy > "$A/build-tool.txt" 2>&1
CLEAN="saxpy hfma_f16 row_normalize reduce_tmpl colsum_bf16 chunk_histogram count_in_range blur7_tiled segment_contains block_scan_shfl scan_pipeline dot_f64"
OOB="volume_gain_oob hfma_f16_oob jacobi_interior_oob score_histogram_oob"
one() {  # label, then the command: one line "label start end rc" in times.txt
  local label=$1; shift
  local s e rc
  s=$(date +%s.%N)
  RACEGATE_TIMELINE="$A/tl-$label.tsv" "$@" > "$A/out-$label.txt" 2>&1
  rc=$?
  e=$(date +%s.%N)
  echo "$label $s $e $rc" >> "$A/times.txt"
}
own() { one "$1-own-$2" env RACEGATE_GC_TRACE=1 $RG sanitize --tool globalcheck,sharedcheck,fencecheck --timeout 60 --save-xml "$A/report-$1-$2.jsonl" "$2"; }
mem() { one "$1-mem-$2" $RG sanitize --tool memcheck --timeout 60 "$2"; }
str() { one "$1-stress-$2" $RG stress "$2" --trials 100; }
echo "phase alone $(date +%s.%N)" >> "$A/times.txt"
for c in saxpy reduce_tmpl; do own alone $c; own alone $c; mem alone $c; str alone $c; done
mem alone volume_gain_oob
echo "phase own12 $(date +%s.%N)" >> "$A/times.txt"
for c in $CLEAN; do own p12 $c & done; wait
echo "phase mem12 $(date +%s.%N)" >> "$A/times.txt"
for c in $CLEAN; do mem m12 $c & done; wait
echo "phase own12+oob4 $(date +%s.%N)" >> "$A/times.txt"
for c in $CLEAN; do own mix $c & done; for c in $OOB; do mem mix $c & done; wait
echo "phase stress12 $(date +%s.%N)" >> "$A/times.txt"
for c in $CLEAN; do str s12 $c & done; wait
echo "phase end $(date +%s.%N)" >> "$A/times.txt"
kill $V $G 2>/dev/null
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
cd "$OUT" && tar czf a.tgz a && rm -rf a
ls -la "$OUT"
