// racegate buggy variant: privatized histogram with a plain ++ on the shared bins.
//
// Wrong line: the one marked BUG. Two threads of a block that see the same byte both read
// the bin, both add one, both write: one count is lost (a lost update on shared memory).
// racecheck reports the shared-memory hazard; stress sees counts that are too low.
//
//@ exercise: histogram
//@ breaks: kernels/histogram_shared.cu
//@ bug: lost update (non-atomic read-modify-write on shared memory)
//@ expect: stress=flag stress-nojitter=flag racecheck=flag
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
        local[data[i]]++;  // BUG: not atomic: concurrent increments of one bin are lost
    __syncthreads();  // all counting is done before the merge reads the private bins
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)
        if (local[b] != 0)
            atomicAdd(&bins[b], local[b]);
}
