// racegate buggy variant: the last-block sum without the __threadfence() before the ticket.
//
// Wrong line: the one marked BUG. Thread 0 stores its block's partial and takes a ticket with no
// fence between: the CUDA memory model lets another block see the ticket (the atomicAdd) before it
// sees the partial, so the block that draws the last ticket may sum a partial that is not there
// yet (the poison, or the previous launch's value) and *out is wrong.
// fencecheck must flag it: globalcheck pairs the partial's store with the last block's read
// through the ticket (the release) and the last block's ticket (the acquire), and the SASS has no
// MEMBAR of GPU scope on the path from the store (the BUG line) to the atomicAdd. Nothing else
// catches it: racecheck and synccheck do not look at global memory; every access is in bounds and
// every byte is written before it is read, so memcheck and initcheck have nothing to report;
// globalcheck cannot see fences (the Sanitizer API has no patch point for MEMBAR), so it takes
// the atomic ticket alone as the handoff. Stress could only catch a wrong sum, and on the H200 it
// did not: 2000 of 2000 trials right, with and without jitter (runs 19 and 20;
// examples/corpus/kernels/dot_f64_nofence.cu likewise in runs 10-11).
//
//@ exercise: lastblock
//@ breaks: kernels/lastblock_sum.cu
//@ bug: missing __threadfence between a global store and the atomic that publishes it
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
        partial[blockIdx.x] = s;  // BUG: no __threadfence() between this store and the ticket
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
