#!/usr/bin/env bash
# Run 22, call C: call B's fixtures again (B's results were lost to its deadline), with a hard
# deadline before the pack this time; fencecheck's catalog cases, SASS fixtures; streamcheck.
set -u
RG="$PWD/.gpu/racegate"
C="$OUT/c"; mkdir -p "$C"
( timeout 320 python3 ci/h200_run.py --racegate "$RG" --bundle .gpu --out "$C/fixtures" --phases env,sanitize,globalcheck \
    --runs 1 --jobs 12 --gc-timing 0 --no-gc-programs > "$C/fixtures.log" 2>&1; echo "exit $?" >> "$C/fixtures.log" ) &
L1=$!
( F="$C/fence"; mkdir -p "$F/sass"
  for pair in kernels/lastblock_sum.cu:lastblock_sum buggy_variants/lastblock_sum/no_fence.cu:lastblock_sum_no_fence \
      buggy_variants/lastblock_sum/block_fence.cu:lastblock_sum_block_fence kernels/lastblock_acqrel.cu:lastblock_acqrel \
      buggy_variants/lastblock_acqrel/relaxed.cu:lastblock_acqrel_relaxed examples/corpus/kernels/dot_f64.cu:corpus_dot_f64 \
      examples/corpus/kernels/dot_f64_nofence.cu:corpus_dot_f64_nofence; do
    f=${pair%%:*}; s=${pair##*:}
    nvcc -cubin -arch=sm_90 -lineinfo "$f" -o "/tmp/$s.cubin" && nvdisasm -c --print-line-info "/tmp/$s.cubin" | sed "s#$PWD/##g" > "$F/sass/$s.sass"
  done > "$F/sass.log" 2>&1
  (nvcc --version; nvdisasm --version) > "$F/sass/versions.txt" 2>&1
  for c in sum_lastblock::no_fence sum_lastblock::block_fence sum_lastblock_acqrel::relaxed sum_lastblock sum_lastblock_acqrel; do
    echo "\$ racegate sanitize --tool fencecheck $c"; timeout 60 "$RG" sanitize --tool fencecheck "$c" --save-xml "$F/${c//:/_}.jsonl"; echo "[rc=$?]"
  done > "$F/catalog.txt" 2>&1
  timeout 120 python3 ci/streams-check --racegate "$RG" --out "$C/streams" > "$C/streams.log" 2>&1; echo "exit $?" >> "$C/streams.log"
) &
L2=$!
( sleep 345; kill -- -$L1 -$L2 2>/dev/null; pkill -f h200_run.py; pkill -f streams-check; pkill -f 'racegate' ) &
W=$!
wait $L1 $L2; kill $W 2>/dev/null
ps -eo pid,pgid,stat,etime,cmd | grep -v grep | grep -E 'racegate|compute-sanitizer' > "$C/leftovers.txt" || echo "none left" > "$C/leftovers.txt"
tar czf "$OUT/c.tgz" -C "$OUT" c && rm -rf "$C"
ls -la "$OUT"
