// The per-block count of kernels/count_in_range.cu with the second barrier removed: thread 0
// reads the block's counter right after its own atomicAdd.
//
// Wrong line: the one marked BUG. Thread 0 (warp 0) reads `hits` with a plain load while the
// other seven warps of the block may not have added their hits yet: counts[b] comes out short.
// A plain read racing shared atomics, with no barrier between them.
// Must be caught by: sharedcheck (thread 0's read of `hits` against another warp's atomicAdd,
// no __syncthreads between them). racecheck does not report a plain access against an atomic
// one. Stress with the reference (reference/count_ref.cu) sees a short count only when another
// warp of the block is late; warps of a block start together, so without jitter it is rare.
//
// Launch: block 256, grid ceil_div(n, 256). The last block may be partly past n.
extern "C" __global__ void count_in_range_racy(const float* x, unsigned int* counts, float lo, float hi,
                                               int n)
{
    __shared__ unsigned int hits;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (threadIdx.x == 0)
        hits = 0;
    __syncthreads();

    if (i < n && x[i] >= lo && x[i] < hi)
        atomicAdd(&hits, 1u);
    // BUG: no __syncthreads(): thread 0 may read the total before the other warps have added

    if (threadIdx.x == 0)
        counts[blockIdx.x] = hits;
}
