// Common mistake: `bins[v]++` on global memory instead of atomicAdd. Threads that read the
// same bin at once each add one to the same old value: updates are lost. racecheck sees only
// shared memory, so only the results show it.
extern "C" __global__ void histogram_zero(unsigned int* bins)
{
    bins[threadIdx.x] = 0;
}

extern "C" __global__ void histogram(const unsigned char* data, unsigned int* bins, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        bins[data[i]]++;  // the mistake
}
