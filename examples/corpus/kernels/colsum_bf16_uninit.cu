// The bf16 column sums of kernels/colsum_bf16.cu, accumulating into `sums` as if the caller
// had zeroed it, which the caller does not: sums is a plain output.
//
// Wrong line: the one marked BUG (`+=` instead of `=`). Each thread reads sums[c] before any
// write to it; the memory holds whatever the allocation held (under stress, racegate's 0xFF
// poison, a NaN; under the sanitizers, never-written memory). A read of uninitialized global
// memory: the bug in code that worked while a test harness happened to hand it a zeroed buffer.
// Must be caught by: initcheck ("Uninitialized __global__ memory read" at this line; racegate
// leaves outputs unpoisoned under the sanitizers for exactly this), and stress with the
// reference oracle (reference/colsum_ref.cu): NaN + acc is NaN, never the right sum.
// racecheck and memcheck have nothing to see.
//
// Launch: block 128, grid ceil_div(cols, 128), as the correct kernel.
#include <cuda_bf16.h>

extern "C" __global__ void colsum_bf16_uninit(
    const __nv_bfloat16* x, float* sums, int rows, int cols)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols)
        return;
    float acc = 0.0f;
    for (int r = 0; r < rows; ++r)
        acc += __bfloat162float(x[(size_t)r * cols + c]);
    sums[c] += acc;  // BUG: reads sums[c], which nobody initialized
}
