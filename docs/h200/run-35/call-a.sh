#!/usr/bin/env bash
# Run 35, call A (2026-12-06): run 34's call D, which did not run there. The 50 corpus programs
# run 34's calls A and C did not gate, fastest first (run 33's ALL reversed), 4 gates at once with
# defaults, binary of 488c405, DEADLINE=540. The slowest programs get a call of their own (run 34's
# lesson: slowest first filled the four slots for a whole call). The pack is made whatever happens.
set -u
. docs/h200/run-33/lib.sh
REST=olcf-stencil-1d,olcf-hello,cba-sum-reduction-sequential,olcf-vector-add,thrust-async-reduce,thrust-custom-temp-alloc,blog-shared-reverse,cba-sum-reduction-bank-conflicts,cba-vector-add-managed,thrust-explicit-stream,thrust-set-operations,thrust-stream-compaction,blog-haxpy,cba-histogram-shared-atomic,cba-sum-reduction-diverged,cub-decoupled-look-back,cub-device-select-unique,olcf-harmonic-atomic,olcf-linked-list-managed,thrust-histogram,thrust-monte-carlo,thrust-sort,blog-finite-difference,blog-managed-classes,cub-device-partition-if,olcf-reductions,thrust-bucket-sort2d,cba-conv1d-constant,cba-conv1d-tiled,olcf-cg-grid-sync,olcf-cg-tiles,olcf-matmul-tiled,olcf-max-reduction,blog-async-overlap,blog-transpose,cba-conv1d-cache,cub-device-reduce,blog-bandwidth,cub-block-radix-sort,blog-gups,cba-conv2d-constant,cub-device-scan,cub-sort-find-runs,hec-babelstream,cub-block-reduce,cba-histogram-global-atomic,hec-concurrent-kernels,olcf-matrix-mul-shared,olcf-matrix-mul,olcf-transpose-smem-padded
begin a
step corpus-build timeout 90 python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --build-only --build-jobs 14
step corpus-4 timeout "$(left)" python3 ci/gate-corpus run --racegate "$RG" --corpus .gpu/corpus --out "$A/corpus" --parallel 4 --no-plain --only "${ONLY:-$REST}"
{ date -u; ps -eo pid,ppid,etimes,pcpu,stat,args --sort=etimes | grep -E 'racegate|sanitizer|corpus/bin' | cut -c1-300; nvidia-smi; } > "$A/at-end.txt" 2>&1
pack a
