// The one-launch f64 dot product of kernels/dot_f64.cu without the __threadfence() between a
// block's partial store and its ticket.
//
// Wrong line: the one marked BUG. Without the fence, the memory model lets the atomicAdd on
// *blocks_done become visible before the store to partial[blockIdx.x]; the last block can then
// see all the tickets and still read a partial that is not there yet (the poison, or a
// previous launch's value), and *result is wrong.
// Expected to ESCAPE every detector, and listed here to say so honestly: racecheck and synccheck
// do not look at global memory ordering; every access is in bounds, so memcheck has nothing to
// report; initcheck tracks whether a byte was ever written, not whether the write was visible
// to the reader. The window
// is tiny (a store and an atomic of the same thread; in practice only the partials stored just
// before the last ticket are at risk), and on the H200 (sm_90) a missing fence before a
// last-block handoff escaped every dynamic detector at the sizes tried. Only stress with the
// reference oracle (reference/dot_ref.cu) could catch it, rarely, most likely at large grids
// and under jitter.
// A gate that reports this twin clean is telling the truth about what it saw; it is in the
// corpus so that the README's table records the escape instead of hiding it.
//
// Launch: block 256, grid min(ceil_div(n, 256), 264), as the correct kernel.

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

extern "C" __global__ void dot_f64_nofence(
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
        // BUG: no __threadfence() here: the ticket may be seen before the partial above
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
