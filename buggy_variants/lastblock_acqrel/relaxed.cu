// racegate buggy variant: the release/acquire last-block sum with a relaxed ticket.
//
// Wrong line: the one marked BUG. A relaxed fetch_add (memory_order_relaxed) makes the ticket an atomic with no
// ordering: nothing orders the partial stored just before it, so the block that draws the last
// ticket may read a partial that is not there yet, and *out is wrong. The fix is
// memory_order_acq_rel (kernels/lastblock_acqrel.cu), or release here and a fence after.
// fencecheck must flag it: on sm_90 a relaxed device-scope fetch_add compiles to a bare ATOM
// with no MEMBAR before it, so no GPU-scope fence lies between the partial's store
// and the ticket. globalcheck sees the ticket as a handoff and cannot see what orders it; stress
// is unlikely to see the window (see buggy_variants/lastblock_sum/no_fence.cu).
//
//@ exercise: lastblock
//@ breaks: kernels/lastblock_acqrel.cu
//@ bug: relaxed atomic publishes a global store to other blocks (no release)
//@ expect: stress=may stress-nojitter=may globalcheck=may fencecheck=flag
//@ entry: sum_lastblock_acqrel

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

// cuda::atomic_ref<unsigned, cuda::thread_scope_device>(*p).fetch_add(v, memory_order_relaxed),
// written as the PTX it compiles to (atom.relaxed.gpu), as kernels/lastblock_acqrel.cu does.
__device__ unsigned fetch_add_relaxed(unsigned* p, unsigned v)
{
    unsigned old;
    asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
    return old;
}

extern "C" __global__ void sum_lastblock_acqrel(const unsigned* in, unsigned* partial, unsigned* done,
                                                unsigned* out, int n)
{
    __shared__ unsigned warp_sums[32];
    __shared__ bool is_last;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned s = block_sum(i < n ? in[i] : 0u, warp_sums);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = s;
        unsigned ticket = fetch_add_relaxed(done, 1u);  // BUG: relaxed: no release
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
