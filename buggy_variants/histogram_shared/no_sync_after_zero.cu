// racegate buggy variant: privatized histogram without the barrier after zeroing the bins.
//
// Wrong line: the one marked BUG. A warp may start counting into a private bin that
// another warp has not zeroed yet; the late zeroing then wipes those counts, or the count
// lands on stale data left in shared memory (RAW/WAW on shared memory).
// On the H200 this almost escapes: racecheck reports nothing (the other side of the race is
// an atomic), and stress saw it in 3 of 50 trials with jitter in one run (block of 1024
// threads) and in 0 of 400 in others: each warp zeroes its bins long before its first global
// load returns, and jitter acts at barriers, of which there is none before the counting.
// sharedcheck must flag it: another warp's atomicAdd into a bin against the plain zeroing store,
// with no barrier between them (or the atomic reads a bin no thread has written yet).
//
//@ exercise: histogram
//@ breaks: kernels/histogram_shared.cu
//@ bug: missing barrier after initialization of shared memory
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
    // BUG: the __syncthreads() that made every private bin zero before counting was here
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();  // all counting is done before the merge reads the private bins
    for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x)
        if (local[b] != 0)
            atomicAdd(&bins[b], local[b]);
}
