#!/usr/bin/env bash
# Run 30, call A: what one GPU process costs beside others, and two knobs that might lower it.
# 1. Micro: tiny.cu (built here with nvcc) N times, C at once, bare and under compute-sanitizer:
#    the default; CUDA_DEVICE_MAX_CONNECTIONS=1 (one hardware queue per context instead of 8);
#    compute-sanitizer with a base port of its own per instance (--port; by default every
#    instance starts at 49152 and takes the next free one of 10); memcheck without its device
#    heap check, NVTX and child tracking.
# 2. End to end with HEAD's racegate (the binary carried in .gpu/): the grading batch of runs
#    26-29 and the corpus gate at the default, and with the knobs (the port one through a
#    wrapper named by RACEGATE_COMPUTE_SANITIZER). The pack is made whatever happens.
set -u
A="$OUT/a"; mkdir -p "$A"
RG=$PWD/.gpu/racegate
. docs/h200/run-30/lib.sh
( sleep 560; pkill -f racegate; pkill -f compute-sanitizer ) >/dev/null 2>&1 &
W=$!
monitors
env_txt
CS=$(command -v compute-sanitizer)
W8=$A/wrap; mkdir -p "$W8"
cat > "$W8/cs-port" <<WRAP
#!/bin/bash
exec "$CS" --port \$(( 49152 + (\$\$ % 1000) * 12 )) "\$@"
WRAP
chmod +x "$W8/cs-port"
nvcc -arch=sm_90 -lineinfo -o "$W8/tiny" docs/h200/run-30/tiny.cu > "$A/nvcc.txt" 2>&1
burst() { # label N C command...: N runs, C at once; wall and failures into micro.txt
  local label=$1 n=$2 c=$3; shift 3
  local s; s=$(now)
  local fails
  fails=$(seq "$n" | xargs -P "$c" -I{} sh -c '"$@" > /dev/null 2>&1 || echo x' _ "$@" | wc -l)
  local e; e=$(now)
  echo "$label n=$n c=$c wall=$(python3 -c "print(f'{$e - $s:.2f}')") per_process=$(python3 -c "print(f'{($e - $s) / $n:.3f}')") failed=$fails" >> "$A/micro.txt"
}
T="$W8/tiny"
micro() {
  burst bare 12 1 "$T"
  burst bare 32 8 "$T"
  burst bare 48 16 "$T"
  burst bare-maxconn1 48 16 env CUDA_DEVICE_MAX_CONNECTIONS=1 "$T"
  burst memcheck 6 1 "$CS" --tool memcheck "$T"
  burst memcheck 32 8 "$CS" --tool memcheck "$T"
  burst memcheck 48 16 "$CS" --tool memcheck "$T"
  burst memcheck-port 48 16 "$W8/cs-port" --tool memcheck "$T"
  burst memcheck-maxconn1 48 16 env CUDA_DEVICE_MAX_CONNECTIONS=1 "$CS" --tool memcheck "$T"
  burst memcheck-lean 48 16 "$CS" --tool memcheck --check-device-heap no --nvtx no --target-processes application-only "$T"
  burst racecheck 48 16 "$CS" --tool racecheck --racecheck-report analysis "$T"
  burst racecheck-port 48 16 "$W8/cs-port" --tool racecheck --racecheck-report analysis "$T"
  burst memcheck 48 16 "$CS" --tool memcheck "$T"
  burst bare 48 16 "$T"
}
step micro micro
(cd examples/corpus && timeout 120 "$RG" compile > "$A/corpus-compile.txt" 2>&1)
batch30
step grade timeout 150 bash -c "$(declare -f grade30); A=$A RG=$RG B=$B; grade30 grade"
step grade-port timeout 150 bash -c "$(declare -f grade30); A=$A RG=$RG B=$B; grade30 grade-port RACEGATE_COMPUTE_SANITIZER=$W8/cs-port"
step corpus timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus"
step corpus-port timeout 110 bash -c "$(declare -f corpus); A=$A RG=$RG TOOLS=$TOOLS; corpus corpus-port RACEGATE_COMPUTE_SANITIZER=$W8/cs-port"
step grade-maxconn1 timeout 150 bash -c "$(declare -f grade30); A=$A RG=$RG B=$B; grade30 grade-maxconn1 CUDA_DEVICE_MAX_CONNECTIONS=1"

stop_monitors
pkill -P $W 2>/dev/null; kill $W 2>/dev/null
date -u >> "$A/env.txt"
tar czf "$OUT/a.tgz" -C "$OUT" a && rm -rf "$A"
ls -la "$OUT"
