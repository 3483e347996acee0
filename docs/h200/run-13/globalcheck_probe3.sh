#!/bin/bash
# globalcheck probe 3: trace every callback; a no-op callback; gdb's backtrace of the crash.
# Usage, from the repository root: bash docs/h200/run-13/globalcheck_probe3.sh OUT_DIR (in ci/ when it ran in H200 run 13c;
# moved here with its record, issue #33)
O=$1; mkdir -p "$O"; O=$(realpath "$O"); B=$O/build; mkdir -p "$B"
SANLIB=/usr/local/cuda/compute-sanitizer; SANINC=$SANLIB/include
{ g++ -std=c++17 -O0 -g -shared -fPIC -I"$SANINC" -I/usr/local/cuda/include -Iharness/globalcheck -o "$B/libgc.so" harness/globalcheck/tool.cpp -L"$SANLIB" -lsanitizer-public -ldl -Wl,-rpath,"$SANLIB"
  nvcc --fatbin --keep-device-functions -Xptxas --compile-as-tools-patch -gencode arch=compute_90,code=sm_90 -I"$SANINC" -Iharness/globalcheck -o "$B/patches.fatbin" harness/globalcheck/patches.cu
  nvcc -arch=sm_90 -lineinfo -o "$B/global_races" examples/globalcheck/global_races.cu; which gdb; } > "$B/build.txt" 2>&1
run() { local d=$O/$1; shift; mkdir -p "$d"
  env RACEGATE_GC_TRACE=1 RACEGATE_GC_DIR=$d RACEGATE_GC_PATCHES=$B/patches.fatbin CUDA_INJECTION64_PATH=$B/libgc.so "$@" > "$d/out.txt" 2>&1
  echo "rc=$?" >> "$d/out.txt"; }
run trace RACEGATE_GC_MODE=detect timeout 60 "$B/global_races" counter_plain
run noop RACEGATE_GC_MODE=detect RACEGATE_GC_NOOP=1 timeout 60 "$B/global_races" counter_plain
run gdb RACEGATE_GC_MODE=detect RACEGATE_GC_NO_CRASH_HANDLER=1 timeout 120 gdb -batch -ex run -ex bt -ex "info threads" --args "$B/global_races" counter_plain
