// Column sums of a rows-by-cols bf16 matrix (row-major), accumulated in f32:
// sums[c] = x[0][c] + x[1][c] + ... + x[rows-1][c]. One thread per column walks down its
// column; neighbouring threads read neighbouring columns, so every row access is coalesced.
// sums is a plain output: the kernel overwrites it and needs nothing in it beforehand.
// Exact for small integer values (bf16 holds every integer up to 256; the f32 sum is exact).
//
// Launch: block 128, grid ceil_div(cols, 128).
#include <cuda_bf16.h>

extern "C" __global__ void colsum_bf16(
    const __nv_bfloat16* x, float* sums, int rows, int cols)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols)
        return;
    float acc = 0.0f;
    for (int r = 0; r < rows; ++r)
        acc += __bfloat162float(x[(size_t)r * cols + c]);
    sums[c] = acc;
}
