// Per-block counts of the samples that fall in [lo, hi): counts[b] is how many of block b's 256
// samples x[i] have lo <= x[i] < hi. The host scans these counts into write offsets for the
// compaction pass that follows, so every block reports its own count (even a zero).
//
// Each thread tests its sample and bumps the block's counter in shared memory; thread 0 then
// publishes the total. A shared counter instead of a global atomicAdd per hit: one global store
// per block.
//
// Launch: block 256, grid ceil_div(n, 256). The last block may be partly past n.
extern "C" __global__ void count_in_range(const float* x, unsigned int* counts, float lo, float hi,
                                          int n)
{
    __shared__ unsigned int hits;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;

    if (threadIdx.x == 0)
        hits = 0;
    __syncthreads();

    if (i < n && x[i] >= lo && x[i] < hi)
        atomicAdd(&hits, 1u);
    __syncthreads();  // wait for the whole block's atomicAdds before reading the total

    if (threadIdx.x == 0)
        counts[blockIdx.x] = hits;
}
