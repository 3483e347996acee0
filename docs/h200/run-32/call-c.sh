#!/usr/bin/env bash
# Run 32, call C (2026-12-05): issue #46's corpus record, continued. The third-party corpus
# (.gpu/corpus, ci/gate-corpus stage) built, then gated with racegate's defaults 4 at once
# (the principal case: a shared GPU runner), the programs call A did not reach first; then the
# 30 s correct program with defaults. Hard deadline 570 s; the pack is made whatever happens.
# Made after call A (same session): call A's plain runs, one at a time, took 165 s of its
# corpus step, so the plain times come from call A (programs/NAME/plain.txt there) and this
# call gates with --no-plain; the slow program is gated beside the corpus from the start.
set -u
. docs/h200/run-30/lib.sh
. docs/h200/run-32/lib.sh
begin c
# Streamcheck's cost again, first and alone: this build batches the log's writes, asks the
# thread id once and stops unwinding past the program's frames (call A: 2.81x the whole run).
step streams-cost timeout 60 python3 ci/streams-cost --racegate "$RG" --out "$A/streams-cost" --reps 3
S=$(mktemp -d)
nvcc -arch=sm_90 -lineinfo -o "$S/slow_correct" docs/h200/run-31/slow_correct.cu > "$A/slow-build.txt" 2>&1
slow() { cd "$S" && "$RG" gate --json "$A/slow.json" -- ./slow_correct; echo "gate exit $?"; }
step slow timeout "$(left)" bash -c "$(declare -f slow); A=$A RG=$RG S=$S; slow" &
SLOW=$!
step corpus-build timeout 90 python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --build-only --build-jobs 12
# The two slowest programs (call A's plain runs: 61.1 s and 27.2 s) last, in a folder of their
# own, so that they do not hold two of the four slots while the other 60 wait.
SLOWEST=cba-mmul-rectangular,hec-kernel-launch
REST=olcf-hello,olcf-vector-add,olcf-matrix-mul,olcf-matrix-mul-shared,olcf-stencil-1d,olcf-vector-add-one-thread,olcf-matrix-sums,olcf-reductions,olcf-max-reduction,olcf-linked-list-managed,olcf-transpose-naive,olcf-transpose-smem,olcf-transpose-smem-padded,olcf-cg-tiles,olcf-cg-grid-sync,olcf-matmul-tiled,olcf-harmonic-atomic,blog-async-overlap,blog-bandwidth,blog-finite-difference,blog-transpose,blog-shared-reverse,blog-managed-classes,blog-haxpy,blog-gups,cba-vector-add-pinned,cba-vector-add-managed,cba-mmul-tiled,cba-sum-reduction-diverged,cba-sum-reduction-bank-conflicts,cba-sum-reduction-sequential,cba-histogram-global-atomic,cba-histogram-shared-atomic,cba-conv1d-constant,cba-conv1d-tiled,cba-conv1d-cache,cba-conv2d-constant,thrust-async-reduce,thrust-explicit-stream,thrust-custom-temp-alloc,thrust-histogram,thrust-monte-carlo,thrust-sort,thrust-set-operations,thrust-summed-area-table,thrust-sorting-aos-soa,thrust-stream-compaction,thrust-bucket-sort2d,cub-block-reduce,cub-block-scan,cub-block-radix-sort,cub-device-reduce,cub-device-scan,cub-device-radix-sort,cub-device-select-unique,cub-device-partition-if,cub-decoupled-look-back,cub-sort-find-runs,hec-concurrent-kernels,hec-babelstream
step corpus-4 timeout "$(left)" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --parallel 4 --no-plain --only "${ONLY:-$REST}"
step corpus-slowest timeout "$(left)" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus-slowest" --parallel 4 --no-plain --only "$SLOWEST"
wait $SLOW
pack c
