#!/usr/bin/env bash
# Run 22, call B: the correctness phases, four lanes at once (no timing is read from this call).
set -u
RG="$PWD/.gpu/racegate"
B="$OUT/b"; mkdir -p "$B"
# Lane 1: sanitizer fixtures (compute-sanitizer's four, globalcheck and sharedcheck per case).
( timeout 560 python3 ci/h200_run.py --racegate "$RG" --bundle .gpu --out "$B/fixtures" --phases env,sanitize,globalcheck \
    --runs 1 --jobs 6 --gc-timing 0 --no-gc-programs > "$B/fixtures.log" 2>&1; echo "exit $?" >> "$B/fixtures.log" ) &
# Lane 2: 30 third-party programs under the gate's defaults.
( timeout 560 python3 ci/gate-samples run --racegate "$RG" --samples .gpu/samples --out "$B/samples" \
    --parallel 4 --gate-jobs 2 --sanitize-timeout 60 --gate-deadline 300 > "$B/samples.log" 2>&1; echo "exit $?" >> "$B/samples.log" ) &
# Lane 3: streamcheck's programs; fencecheck on the catalog, the corpus and the SASS fixtures.
( set +e
  timeout 200 python3 ci/streams-check --racegate "$RG" --out "$B/streams" > "$B/streams.log" 2>&1; echo "exit $?" >> "$B/streams.log"
  F="$B/fence"; mkdir -p "$F/sass"
  for c in sum_lastblock::no_fence sum_lastblock::block_fence sum_lastblock_acqrel::relaxed sum_lastblock sum_lastblock_acqrel; do
    echo "\$ racegate sanitize --tool fencecheck $c"; timeout 120 "$RG" sanitize --tool fencecheck "$c" --save-xml "$F/${c//:/_}.jsonl"; echo "[rc=$?]"
  done > "$F/catalog.txt" 2>&1
  ( cd examples/corpus && for k in $(python3 -c "import tomllib;print(' '.join(k['name'] for k in tomllib.load(open('racegate.toml','rb'))['kernel']))"); do
      echo "\$ racegate sanitize --tool fencecheck $k"; timeout 120 "$RG" sanitize --tool fencecheck "$k"; echo "[rc=$?]"; done ) > "$F/corpus.txt" 2>&1
  for pair in kernels/lastblock_sum.cu:lastblock_sum buggy_variants/lastblock_sum/no_fence.cu:lastblock_sum_no_fence \
      buggy_variants/lastblock_sum/block_fence.cu:lastblock_sum_block_fence kernels/lastblock_acqrel.cu:lastblock_acqrel \
      buggy_variants/lastblock_acqrel/relaxed.cu:lastblock_acqrel_relaxed examples/corpus/kernels/dot_f64.cu:corpus_dot_f64 \
      examples/corpus/kernels/dot_f64_nofence.cu:corpus_dot_f64_nofence; do
    f=${pair%%:*}; s=${pair##*:}
    nvcc -cubin -arch=sm_90 -lineinfo "$f" -o "/tmp/$s.cubin" && nvdisasm -c --print-line-info "/tmp/$s.cubin" | sed "s#$PWD/##g" > "$F/sass/$s.sass"
  done > "$F/sass.log" 2>&1
  nvcc --version > "$F/sass/nvcc-version.txt"; nvdisasm --version >> "$F/sass/nvcc-version.txt"
) &
# Lane 4: mutation testing on the catalog and the corpus (budgeted).
( timeout 560 python3 ci/h200_run.py --racegate "$RG" --bundle .gpu --out "$B/mutate" --phases mutate --jobs 4 \
    > "$B/mutate.log" 2>&1; echo "exit $?" >> "$B/mutate.log" ) &
wait
ps -eo pid,pgid,stat,etime,cmd | grep -v grep | grep -E 'racegate|compute-sanitizer' > "$B/leftovers.txt" || echo "none left" > "$B/leftovers.txt"
tar czf "$OUT/b.tgz" -C "$OUT" b && rm -rf "$B"
ls -la "$OUT"; tar xzf "$OUT/b.tgz" -O b/fixtures/summary.txt b/samples.log 2>/dev/null | tail -50
