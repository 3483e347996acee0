// racegate: byte histogram into 256 bins with global-memory atomics.
//
// Computes bins[v] = number of i < n with data[i] == v, for v in 0..255.
// Launch: histogram_zero <<<1, 256>>> (bins), then histogram_global with block (256) and any
// grid; a grid-stride loop covers all n bytes whatever the grid. The host does not clear
// `bins`: histogram_zero does, and every count goes through atomicAdd, because many threads
// add to the same bin at the same time (a plain `++` would lose updates).
//
//@ exercise: histogram
//@ entry: histogram_global

#define NUM_BINS 256

extern "C" __global__ void histogram_zero(unsigned int* bins)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < NUM_BINS)
        bins[b] = 0;
}

extern "C" __global__ void histogram_global(const unsigned char* data, unsigned int* bins, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&bins[data[i]], 1u);
}
