// racegate buggy variant: histogram with a plain ++ on the global bins.
//
// Wrong line: the one marked BUG. Threads across the whole grid increment the same bins
// without atomics, so increments are lost. racecheck checks shared memory only and reports
// nothing here; the result check (stress) and globalcheck (racegate's global-memory race
// detector) catch this lost update.
//
//@ exercise: histogram
//@ breaks: kernels/histogram_global.cu
//@ bug: lost update (non-atomic read-modify-write on global memory)
//@ expect: stress=flag stress-nojitter=flag racecheck=clean globalcheck=flag
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
        bins[data[i]]++;  // BUG: not atomic: concurrent increments of one bin are lost
}
