// Reference for kernels/count_in_range*.cu: block b's count of samples in [lo, hi), counted by
// its thread 0 in a plain loop. Launched with the kernel's geometry (block 256,
// grid ceil_div(n, 256)).
extern "C" __global__ void count_in_range_ref(const float* x, unsigned int* counts, float lo,
                                              float hi, int n)
{
    if (threadIdx.x != 0)
        return;
    unsigned int c = 0;
    for (int i = blockIdx.x * blockDim.x; i < n && i < (blockIdx.x + 1) * blockDim.x; ++i)
        if (x[i] >= lo && x[i] < hi)
            ++c;
    counts[blockIdx.x] = c;
}
