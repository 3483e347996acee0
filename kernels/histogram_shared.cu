// racegate: byte histogram into 256 bins, privatized in shared memory.
//
// Computes bins[v] = number of i < n with data[i] == v, for v in 0..255.
// Launch: histogram_zero <<<1, 256>>> (bins), then histogram_shared with block (256) and any
// grid (grid-stride loop). Each block counts into its own 256 shared-memory bins (fast
// shared atomics, contention spread over blocks), then merges them into the global bins
// with one atomicAdd per bin per block. Two barriers: the private bins are all zero before
// anyone counts, and all counting is done before the merge reads them.
//
//@ exercise: histogram
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
    __syncthreads();  // all counting is done before the merge reads the private bins
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)
        if (local[b] != 0)
            atomicAdd(&bins[b], local[b]);
}
