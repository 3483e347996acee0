// Scales every row of a rows-by-cols matrix (row-major) to sum to 1:
// y[r][c] = x[r][c] / (x[r][0] + ... + x[r][cols-1]). The entries are positive.
// One warp per row: the lanes stride over the columns, then the 32 partial sums are combined
// with a butterfly (__shfl_xor_sync), which leaves the full row sum in every lane, so every
// lane can divide its own columns. Exact for integer-valued x: the row sum is an exact integer
// and the division is correctly rounded, the same in any order.
//
// Launch: block 256 (8 warps, 8 rows per block; a multiple of 32), grid ceil_div(rows, 8).
extern "C" __global__ void row_normalize(const float* x, float* y, int rows, int cols)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows)
        return;  // the whole warp leaves together: the shuffles below see full warps only

    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float sum = 0.0f;
    for (int c = lane; c < cols; c += 32)
        sum += xr[c];
    for (int offset = 16; offset > 0; offset >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    for (int c = lane; c < cols; c += 32)
        yr[c] = xr[c] / sum;
}
