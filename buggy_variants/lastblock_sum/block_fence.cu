// racegate buggy variant: the last-block sum with __threadfence_block() where __threadfence() is
// needed.
//
// Wrong line: the one marked BUG. Thread 0 stores its block's partial and fences with
// __threadfence_block(), which orders the store before the ticket for the threads of its own block
// only (a MEMBAR of CTA scope). The block that reads the partial is another block: for it the
// ticket may still become visible before the partial, exactly as with no fence at all
// (buggy_variants/lastblock_sum/no_fence.cu), and *out is wrong.
// fencecheck must flag it as a fence of block scope where blocks hand off: on every path from the
// store to the atomicAdd the only MEMBAR is `.CTA`. Stress did not see the same window on the H200
// without a fence at all; globalcheck takes the ticket as the handoff, and cannot see fences.
//
//@ exercise: lastblock
//@ breaks: kernels/lastblock_sum.cu
//@ bug: block-scope fence between a global store and the atomic that publishes it to other blocks
//@ expect: stress=may stress-nojitter=may globalcheck=may fencecheck=flag
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
        __threadfence_block();  // BUG: orders the partial for this block only; the ticket's reader is another
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
