#!/usr/bin/env bash
# Run 27, call C: does a kernel's device fault stall every other process on the GPU? Call A
# hung (GPU idle ~500 s) right after a memcheck run of an out-of-bounds kernel; call B (no
# such kernel) did not. Here: the kernel log's tail before and after; an own-tool run of a
# clean kernel alone (the yardstick), then after each of: memcheck of an out-of-bounds kernel,
# a stress run of it (real faults), its own-tool run; and the clean run *while* a stress run
# of the faulting kernel goes on. Every command under `timeout 40`, the whole under 200 s;
# the pack is made whatever happens.
set -u
C="$OUT/c"; mkdir -p "$C"
RG="$PWD/.gpu/racegate"
body() {
  cd examples/corpus
  one() {
    local label=$1; shift
    local s e rc
    s=$(date +%s.%N)
    RACEGATE_TIMELINE="$C/tl-$label.tsv" timeout 40 "$@" > "$C/out-$label.txt" 2>&1
    rc=$?
    e=$(date +%s.%N)
    echo "$label $s $e $rc" >> "$C/times.txt"
    dmesg -T 2>/dev/null | tail -5 > "$C/dmesg-after-$label.txt"
  }
  timeout 60 $RG compile > "$C/compile.txt" 2>&1
  one build $RG sanitize --tool globalcheck saxpy
  one clean1 $RG sanitize --tool globalcheck,sharedcheck,fencecheck --timeout 30 saxpy
  one clean2 $RG sanitize --tool globalcheck,sharedcheck,fencecheck --timeout 30 saxpy
  one memoob $RG sanitize --tool memcheck --timeout 30 volume_gain_oob
  one clean3 $RG sanitize --tool globalcheck,sharedcheck,fencecheck --timeout 30 saxpy
  one stressoob $RG stress volume_gain_oob --trials 20 --timeout 10
  one clean4 $RG sanitize --tool globalcheck,sharedcheck,fencecheck --timeout 30 saxpy
  one ownoob $RG sanitize --tool globalcheck,sharedcheck,fencecheck --timeout 30 volume_gain_oob
  one clean5 $RG sanitize --tool globalcheck,sharedcheck,fencecheck --timeout 30 saxpy
  one stressclean $RG stress saxpy --trials 100
  ( one bgstressoob $RG stress volume_gain_oob --trials 20 --timeout 10 ) &
  sleep 0.5
  one clean6 $RG sanitize --tool globalcheck,sharedcheck,fencecheck --timeout 30 saxpy
  one stressclean2 $RG stress saxpy --trials 100
  wait
}
dmesg -T 2>&1 | tail -40 > "$C/dmesg-before.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$C/env.txt" 2>&1
nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv -lms 500 > "$C/gpu-util.csv" 2>&1 &
G=$!
export -f body
export C RG
timeout 200 bash -c body > "$C/body.log" 2>&1
echo "body exit $?" >> "$C/body.log"
kill $G 2>/dev/null
dmesg -T 2>&1 | tail -80 > "$C/dmesg-end.txt"
pkill -f "racegate|compute-sanitizer" 2>/dev/null
cd "$OUT" && tar czf c.tgz c && rm -rf c
ls -la "$OUT"
