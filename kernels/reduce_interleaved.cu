// racegate: block sum, step 1 of the reduction ladder: interleaved addressing.
//
// Computes out[b] = in[b * BLOCK] + ... + in[b * BLOCK + BLOCK - 1] for every block b (elements
// past n count as 0). The host (or a second launch) adds the per-block sums.
// Launch: block (BLOCK), grid (ceil(n / BLOCK)); BLOCK is a compile-time constant (256).
// Stride doubles each step; the threads that work are those whose tid is a multiple of
// 2 * stride, so the active threads are scattered across every warp (divergent, and the
// modulo is slow). Every thread reaches every barrier.
//
//@ exercise: reduce
//@ entry: reduce_interleaved block=256

template <int BLOCK>
__device__ void reduce_interleaved_block(const float* in, float* out, int n)
{
    __shared__ float s[BLOCK];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    s[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = 1; stride < BLOCK; stride *= 2) {
        if (tid % (2 * stride) == 0)
            s[tid] += s[tid + stride];
        __syncthreads();  // this step's sums are written before the next step reads them
    }
    if (tid == 0)
        out[blockIdx.x] = s[0];
}

extern "C" __global__ void reduce_interleaved(const float* in, float* out, int n)
{
    reduce_interleaved_block<256>(in, out, n);
}
