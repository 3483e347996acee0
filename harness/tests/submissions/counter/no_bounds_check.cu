// Common mistake: no `if (i < n)`. The last block's extra threads count elements that do not
// exist, so the counters come out too high whenever n is not a multiple of the block size.
extern "C" __global__ void counter(unsigned int* counters, int n, int slots)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&counters[i % slots], 1u);  // the mistake: i may be >= n
}
