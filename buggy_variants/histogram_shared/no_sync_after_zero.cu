// racegate buggy variant: privatized histogram without the barrier after zeroing the bins.
//
// Wrong line: the one marked BUG. A warp may start counting into a private bin that
// another warp has not zeroed yet; the late zeroing then wipes those counts, or the count
// lands on stale data left in shared memory (RAW/WAW on shared memory).
// On the H200 this escaped every detector: stress 0 wrong in 400 trials with and without
// jitter (each warp zeroes its bins long before its first global load returns; jitter acts
// at barriers and there is none), and racecheck reports nothing, since the racing accesses
// on the other side are atomics. It stays in the catalog as a documented blind spot.
//
//@ exercise: histogram
//@ breaks: kernels/histogram_shared.cu
//@ bug: missing barrier after initialization of shared memory
//@ expect: stress=may stress-nojitter=may racecheck=may
//@ escapes: no detector caught it on the H200 (stress 0/400, racecheck silent on atomics)
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
    // BUG: the __syncthreads() that made every private bin zero before counting was here
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();  // all counting is done before the merge reads the private bins
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)
        if (local[b] != 0)
            atomicAdd(&bins[b], local[b]);
}
