// racegate: the last-block sum with the ticket as one release/acquire atomic (cuda::atomic_ref's
// fetch_add with memory_order_acq_rel).
//
// Computes *out = in[0] + ... + in[n-1] (unsigned, wrapping), as kernels/lastblock_sum.cu does,
// with the same launch (block a multiple of 32 up to 1024, grid ceil(n / B); the host clears
// *done once). Instead of two __threadfence() around a relaxed atomicAdd, thread 0 takes its
// ticket with an acq_rel fetch_add at device scope (fetch_add_acq_rel below): the release half publishes the partial stored before it to every block
// that later draws a ticket, and the acquire half makes every partial published before this
// ticket visible to this block (to its other threads through the barrier that follows). On sm_90
// the release compiles to a MEMBAR of GPU scope just before the atomic, which is what fencecheck
// looks for (under the atomic's own predicate); buggy_variants/lastblock_acqrel/relaxed.cu takes
// the ticket relaxed.
//
//@ exercise: lastblock
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

// cuda::atomic_ref<unsigned, cuda::thread_scope_device>(*p).fetch_add(v, memory_order_acq_rel),
// written as the PTX it compiles to (atom.acq_rel.gpu): racegate compiles catalog kernels with
// NVRTC and no include folders, so <cuda/atomic> is not there.
__device__ unsigned fetch_add_acq_rel(unsigned* p, unsigned v)
{
    unsigned old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
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
        // Release: the partial above is seen by whoever draws a later ticket. Acquire: the
        // partials of every earlier ticket are seen here.
        unsigned ticket = fetch_add_acq_rel(done, 1u);
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
