// racegate: a one-launch sum with a last-block reduction (the threadFenceReduction pattern).
//
// Computes *out = in[0] + ... + in[n-1] (unsigned, wrapping). Launch: block (B, a multiple of 32
// up to 1024), grid (ceil(n / B)); the host clears *done once. Each block sums its B elements,
// thread 0 stores the block's sum in partial[blockIdx.x], makes it visible to every block with
// __threadfence(), and takes a ticket with atomicAdd(done, 1). The block that draws the last
// ticket knows every partial is stored and visible (its own fence after the ticket orders its
// block's reads after it, through the barrier): it sums them, writes *out, and puts the counter
// back to 0 so the next launch can use it. The fence is the lesson: without it the
// ticket may become visible before the partial (buggy_variants/lastblock_sum/no_fence.cu).
//
//@ exercise: lastblock
//@ entry: sum_lastblock

// Sum over the warp; the total is in lane 0.
__device__ unsigned warp_sum(unsigned v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

// Sum over the block; the total is in thread 0. A barrier must separate two calls (it reuses
// warp_sums).
__device__ unsigned block_sum(unsigned v, unsigned* warp_sums)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0u;
        v = warp_sum(v);
    }
    return v;
}

extern "C" __global__ void sum_lastblock(const unsigned* in, unsigned* partial, unsigned* done,
                                         unsigned* out, int n)
{
    __shared__ unsigned warp_sums[32];
    __shared__ bool is_last;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned s = block_sum(i < n ? in[i] : 0u, warp_sums);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = s;
        __threadfence();  // the partial is visible to every block before the ticket is
        unsigned ticket = atomicAdd(done, 1u);
        __threadfence();  // the acquire side: what the ticket's holders stored before it is seen
        is_last = ticket == gridDim.x - 1;
    }
    __syncthreads();  // is_last is read by the whole block; warp_sums is reused below
    if (is_last) {
        unsigned t = 0;
        for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)
            t += partial[b];
        t = block_sum(t, warp_sums);
        if (threadIdx.x == 0) {
            *out = t;
            *done = 0;
        }
    }
}
