// racegate: block sum, step 2 of the reduction ladder: sequential addressing.
//
// Computes out[b] = in[b * BLOCK] + ... + in[b * BLOCK + BLOCK - 1] for every block b (elements
// past n count as 0). The host (or a second launch) adds the per-block sums.
// Launch: block (BLOCK), grid (ceil(n / BLOCK)); BLOCK is a compile-time constant (256).
// The active threads are the first s, a contiguous range, so whole warps retire together and
// shared-memory accesses are conflict-free. Every thread, active or not, reaches the barrier.
//
//@ exercise: reduce
//@ entry: reduce_sequential block=256

template <int BLOCK>
__device__ void reduce_sequential_block(const float* in, float* out, int n)
{
    __shared__ float s[BLOCK];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    s[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned half = BLOCK / 2; half > 0; half >>= 1) {
        if (tid < half)
            s[tid] += s[tid + half];
        __syncthreads();  // outside the if: every thread of the block must reach it
    }
    if (tid == 0)
        out[blockIdx.x] = s[0];
}

extern "C" __global__ void reduce_sequential(const float* in, float* out, int n)
{
    reduce_sequential_block<256>(in, out, n);
}
