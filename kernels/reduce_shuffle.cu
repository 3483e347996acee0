// racegate: block sum, step 4 of the reduction ladder: the last warp by register shuffles.
//
// Computes out[b] = in[b * BLOCK] + ... + in[b * BLOCK + BLOCK - 1] for every block b (elements
// past n count as 0). Launch: block (BLOCK), grid (ceil(n / BLOCK)); BLOCK = 256.
// Shared memory and barriers take the block down to 64 partial sums; the first warp adds
// them pairwise and finishes with __shfl_down_sync, which moves values between registers
// of the lanes named in the mask: no shared memory, no barrier, no volatile.
//
//@ exercise: reduce
//@ entry: reduce_shuffle block=256

template <int BLOCK>
__device__ void reduce_shuffle_block(const float* in, float* out, int n)
{
    __shared__ float s[BLOCK];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    s[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned half = BLOCK / 2; half > 32; half >>= 1) {
        if (tid < half)
            s[tid] += s[tid + half];
        __syncthreads();
    }
    if (tid < 32) {
        float sum = s[tid] + s[tid + 32];
        for (int offset = 16; offset > 0; offset >>= 1)
            sum += __shfl_down_sync(0xffffffffu, sum, offset);  // all 32 lanes take part
        if (tid == 0)
            out[blockIdx.x] = sum;
    }
}

extern "C" __global__ void reduce_shuffle(const float* in, float* out, int n)
{
    reduce_shuffle_block<256>(in, out, n);
}
