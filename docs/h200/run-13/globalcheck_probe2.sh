#!/bin/bash
# globalcheck probe 2: where does the tool crash? Each run names a switch that skips one step.
# Usage, from the repository root: bash docs/h200/run-13/globalcheck_probe2.sh OUT_DIR (in ci/ when it ran in H200 run 13b;
# moved here with its record, issue #33)
O=$1; mkdir -p "$O"; O=$(realpath "$O"); B=$O/build; mkdir -p "$B"
SANLIB=/usr/local/cuda/compute-sanitizer; SANINC=$SANLIB/include
{ g++ -std=c++17 -O2 -g -shared -fPIC -I"$SANINC" -I/usr/local/cuda/include -Iharness/globalcheck -o "$B/libgc.so" harness/globalcheck/tool.cpp -L"$SANLIB" -lsanitizer-public -ldl -Wl,-rpath,"$SANLIB"
  nvcc --fatbin --keep-device-functions -Xptxas --compile-as-tools-patch -gencode arch=compute_90,code=sm_90 -I"$SANINC" -Iharness/globalcheck -o "$B/patches.fatbin" harness/globalcheck/patches.cu
  nvcc -arch=sm_90 -lineinfo -o "$B/global_races" examples/globalcheck/global_races.cu
  nvcc -arch=sm_90 -lineinfo -o "$B/matmul_war" examples/globalcheck/matmul_war.cu; } > "$B/build.txt" 2>&1
run() { local d=$O/$1; shift; mkdir -p "$d"; local t0=$EPOCHREALTIME
  env RACEGATE_GC_TRACE=1 RACEGATE_GC_DIR=$d RACEGATE_GC_PATCHES=$B/patches.fatbin CUDA_INJECTION64_PATH=$B/libgc.so "$@" > "$d/out.txt" 2>&1
  echo "rc=$? t0=$t0 t1=$EPOCHREALTIME" >> "$d/out.txt"; }
run all RACEGATE_GC_MODE=detect timeout 60 "$B/global_races" counter_plain
run nosym RACEGATE_GC_MODE=detect RACEGATE_GC_NO_SYMBOLS=1 timeout 60 "$B/global_races" counter_plain
run noglob RACEGATE_GC_MODE=detect RACEGATE_GC_NO_GLOBALS=1 timeout 60 "$B/global_races" counter_plain
run nofunc RACEGATE_GC_MODE=detect RACEGATE_GC_NO_FUNCS=1 timeout 60 "$B/global_races" counter_plain
run nohandler RACEGATE_GC_MODE=detect RACEGATE_GC_NO_CRASH_HANDLER=1 timeout 60 "$B/global_races" counter_plain
run jitter RACEGATE_GC_MODE=jitter timeout 60 "$B/matmul_war" 256
run jitter-noglob-nofunc RACEGATE_GC_MODE=jitter RACEGATE_GC_NO_GLOBALS=1 RACEGATE_GC_NO_FUNCS=1 timeout 60 "$B/matmul_war" 256
