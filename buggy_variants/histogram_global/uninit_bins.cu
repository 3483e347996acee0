// racegate buggy variant: histogram whose output bins are not all initialized.
//
// Wrong line: the one marked BUG. histogram_zero clears bins 0..254 only (an off-by-one in
// its bound), so every atomicAdd on bin 255 reads memory nobody wrote. initcheck reports
// the uninitialized global read; stress sees the poison racegate put in the bin.
//
//@ exercise: histogram
//@ breaks: kernels/histogram_global.cu
//@ bug: read of uninitialized global memory (output never initialized)
//@ expect: stress=flag stress-nojitter=flag initcheck=flag
//@ entry: histogram_global

#define NUM_BINS 256

extern "C" __global__ void histogram_zero(unsigned int* bins)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < NUM_BINS - 1)  // BUG: off by one: bin 255 is never cleared
        bins[b] = 0;
}

extern "C" __global__ void histogram_global(const unsigned char* data, unsigned int* bins, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&bins[data[i]], 1u);
}
