#!/bin/bash
# globalcheck probe on the GPU machine (issue 16, first call): does the injection load, do the
# patches run, how do atomics look, can program counters be mapped to lines, does jitter work.
# Usage, from the repository root: bash docs/h200/run-13/globalcheck_probe.sh RACEGATE_BINARY PREBUILT_DIR OUT_DIR
# (in ci/ when it ran in H200 run 13a; moved here with its record, issue #33)
RG=$(realpath "$1"); PRE=$(realpath "$2"); O=$3
mkdir -p "$O"; O=$(realpath "$O")
B=$O/build; mkdir -p "$B"
{
  echo "# command: $0 $*"; date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  compute-sanitizer --version; nvcc --version; g++ --version | head -1; which nvdisasm
  find /usr/local/cuda/ -name 'libsanitizer-public.so*' -o -name 'sanitizer_patching.h' 2>/dev/null
} > "$O/env.txt" 2>&1
SANLIB=$(dirname "$(find /usr/local/cuda/ -name 'libsanitizer-public.so' | head -1)")
SANINC=$(dirname "$(find /usr/local/cuda/ -name 'sanitizer_patching.h' | head -1)")
echo "SANLIB=$SANLIB SANINC=$SANINC" >> "$O/env.txt"
( set -x
  time g++ -std=c++17 -O2 -shared -fPIC -I"$SANINC" -I/usr/local/cuda/include -Iharness/globalcheck -o "$B/libgc.so" harness/globalcheck/tool.cpp -L"$SANLIB" -lsanitizer-public -ldl -Wl,-rpath,"$SANLIB"
  time nvcc --fatbin --keep-device-functions -Xptxas --compile-as-tools-patch -gencode arch=compute_90,code=sm_90 -I"$SANINC" -Iharness/globalcheck -o "$B/patches.fatbin" harness/globalcheck/patches.cu
  nvcc -arch=sm_90 -lineinfo -o "$B/global_races" examples/globalcheck/global_races.cu
  nvcc -arch=sm_90 -lineinfo -o "$B/matmul_war" examples/globalcheck/matmul_war.cu
  ldd "$PRE/libgc.so"
) > "$B/build.txt" 2>&1
gc() { # DIR TOOL PATCHES MODE cmd...
  local d=$1 tool=$2 patches=$3 mode=$4; shift 4; mkdir -p "$d"
  local t0=$(date +%s.%N)
  RACEGATE_GC_DIR=$d RACEGATE_GC_PATCHES=$patches RACEGATE_GC_MODE=$mode CUDA_INJECTION64_PATH=$tool timeout 120 "$@" > "$d/out.txt" 2>&1
  local rc=$?; echo "rc=$rc seconds=$(echo "$(date +%s.%N) - $t0" | bc)" >> "$d/out.txt"
}
for k in counter_plain counter_atomic warps_no_barrier warps_barrier histogram_plain histogram_atomic neighbour_read own_read last_block_sum handoff_fenced lanes_no_syncwarp lanes_syncwarp; do
  gc "$O/prog/$k" "$B/libgc.so" "$B/patches.fatbin" detect "$B/global_races" "$k"
done
gc "$O/prog-prebuilt/counter_plain" "$PRE/libgc.so" "$PRE/gc_patches.fatbin" detect "$B/global_races" counter_plain
gc "$O/prog-all" "$B/libgc.so" "$B/patches.fatbin" detect "$B/global_races"
for c in "$O"/prog/counter_plain/module-*.cubin; do nvdisasm --print-line-info "$c" > "$c.lines.txt" 2>&1; nvdisasm -c "$c" > "$c.c.txt" 2>&1; done
{ for i in 1 2 3; do /usr/bin/time -f "plain %e s" "$B/global_races"; done
  for i in 1 2 3; do /usr/bin/time -f "racecheck %e s" compute-sanitizer --tool racecheck "$B/global_races" | tail -2; done
  for i in 1 2 3; do gc "$O/timing/gc$i" "$B/libgc.so" "$B/patches.fatbin" detect "$B/global_races"; tail -1 "$O/timing/gc$i/out.txt"; done
} > "$O/timing.txt" 2>&1
# the catalog through racegate sanitize, compute-sanitizer replaced by the injection
export RACEGATE_COMPUTE_SANITIZER=$(realpath "$(dirname "$0")/gc_wrapper.py") RACEGATE_GC_TOOL=$B/libgc.so RACEGATE_GC_PATCHES=$B/patches.fatbin RACEGATE_GC_MODE=detect
for c in $("$RG" list --json - | python3 -c 'import json,sys; print(" ".join(x["name"] for x in json.load(sys.stdin)))'); do
  d="$O/catalog/${c//::/__}"; mkdir -p "$d"
  RACEGATE_GC_DIR=$d timeout 120 "$RG" sanitize "$c" --tool racecheck --timeout 60 > "$d/racegate.txt" 2>&1
  echo "rc=$?" >> "$d/racegate.txt"
done
unset RACEGATE_COMPUTE_SANITIZER
for c in "$O"/catalog/counter_single__nonatomic_counter/module-*.cubin; do nvdisasm --print-line-info "$c" > "$c.lines.txt" 2>&1; done
# jitter on an nvcc-built program
mkdir -p "$O/jitter"
{ for i in $(seq 1 20); do "$B/matmul_war" 256; done | sort | uniq -c
  echo "--- with RACEGATE_GC_MODE=jitter"
  for i in $(seq 1 20); do RACEGATE_GC_SEED=$i RACEGATE_GC_DIR=$O/jitter RACEGATE_GC_PATCHES=$B/patches.fatbin RACEGATE_GC_MODE=jitter CUDA_INJECTION64_PATH=$B/libgc.so "$B/matmul_war" 256; done | sort | uniq -c
} > "$O/jitter.txt" 2>&1
echo done
