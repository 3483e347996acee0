// racegate buggy variant: privatized histogram whose flush reads the bins without the barrier.
//
// Wrong line: the one marked BUG. The barrier between counting (shared atomicAdds) and the merge
// is gone: a warp that has finished counting flushes local[b] with a plain read while other warps
// still add to the same bins, so their late counts are never merged. racecheck does not report a
// plain access racing with an atomic one; stress sees short bins only when a warp is late.
// sharedcheck must flag the pair: the plain read of local[b] in the flush loop against another
// warp's atomicAdd into that bin, with no __syncthreads between them.
//
//@ exercise: histogram
//@ breaks: kernels/histogram_shared.cu
//@ bug: missing barrier between shared atomics and the plain reads that flush them
//@ expect: stress=may stress-nojitter=may racecheck=may sharedcheck=flag
//@ entry: histogram_shared

#define NUM_BINS 256

extern "C" __global__ void histogram_zero(unsigned int* bins)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < NUM_BINS)
        bins[b] = 0;
}

extern "C" __global__ void histogram_shared(const unsigned char* data, unsigned int* bins, int n)
{
    __shared__ unsigned int local[NUM_BINS];
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)
        local[b] = 0;
    __syncthreads();  // every private bin is zero before anyone counts
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)
        if (local[b] != 0)  // BUG: no __syncthreads() after the counting: other warps may still add here
            atomicAdd(&bins[b], local[b]);
}
