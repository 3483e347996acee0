// Dot product of two f64 vectors in a single launch, with the "last block finishes" pattern.
// Each block reduces its grid-stride share (warp shuffles, then the first warp over the warp
// sums) and thread 0 stores the block's sum in partial[blockIdx.x]. Thread 0 then takes a
// ticket from *blocks_done; the block that draws the last ticket knows every other partial is
// stored, adds all of them up in index order, writes *result, and resets *blocks_done to 0 for
// the next launch. The __threadfence() between the partial's store and the ticket is what makes
// "every other partial is stored" true for the last block: without it, the ticket may become
// visible before the partial does.
// Deterministic: the partials are added by index, whichever block is last.
//
// Launch: block 256 (a multiple of 32), grid min(ceil_div(n, 256), 264);
// partial has one element per block; *blocks_done is 0 before the first launch.

// Sum over the warp; the total is in lane 0.
__device__ double warp_sum(double v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

// Sum over the block; the total is in thread 0. Callers must not call it again before a
// barrier (it reuses warp_sums).
__device__ double block_sum(double v, double* warp_sums)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = (lane < (int)(blockDim.x >> 5)) ? warp_sums[lane] : 0.0;
        v = warp_sum(v);
    }
    return v;
}

extern "C" __global__ void dot_f64(
    const double* x, const double* y, double* partial, unsigned* blocks_done, double* result, int n)
{
    __shared__ double warp_sums[32];
    __shared__ bool is_last;

    double v = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        v += x[i] * y[i];
    v = block_sum(v, warp_sums);

    if (threadIdx.x == 0) {
        partial[blockIdx.x] = v;
        __threadfence();  // the partial is visible to every block before the ticket is taken
        unsigned ticket = atomicAdd(blocks_done, 1u);
        is_last = (ticket == gridDim.x - 1);
    }
    __syncthreads();
    if (!is_last)
        return;

    // The last block: every partial is stored. Read them from L2 (__ldcg), not from a
    // possibly stale L1 line.
    __threadfence();
    double t = 0.0;
    for (int b = threadIdx.x; b < (int)gridDim.x; b += blockDim.x)
        t += __ldcg(&partial[b]);
    t = block_sum(t, warp_sums);
    if (threadIdx.x == 0) {
        *result = t;
        *blocks_done = 0;
    }
}
